"""Paper §3.3, end-to-end optimisation: `Trainer` runs REINFORCE on R = Perf - lambda_tok * Tok - lambda_lat * Lat.

It must never let gold reach the controller except through the reward and the difficulty labels, nor
choose anything on the test split: it composes the parts (difficulty_labels, anchor, budget_targeting).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import asdict

import numpy as np
import torch

from agentbalance.measuring import Evaluation, cheapest_mas, measure
from agentbalance.policy.budget_input import conditions
from agentbalance.policy.controller import Controller
from agentbalance.query import Query
from agentbalance.train.anchor import AnchoredStart, AnchorPlan, anchor
from agentbalance.train.budget_targeting import (
    Calibrated,
    DualAscent,
    Snapshot,
    budget_score,
    calibrate_candidates,
)
from agentbalance.train.checkpoints import RestartCheckpoint
from agentbalance.train.config import TrainConfig, TrainResult
from agentbalance.train.difficulty_labels import difficulty_quality, pretrain
from agentbalance.train.policy_gradient import (
    Penalty,
    epoch_batches,
    mean_reward,
    optimiser_step,
    policy_gradient_loss,
    reward_matrix,
    sampled_pairs,
)
from agentbalance.train.training_run import TrainingRun

__all__ = ["TrainConfig", "TrainResult", "Trainer"]  # the first two live in train.config (imported here too)


class Trainer:
    """Trains one controller on one experiment for one budget or a budget range (`budget` a BudgetRange).

    With a range, each training query is given a random grid budget as condition and the reward of
    that budget; every grid budget has its own dual variables and its own calibrated delta. The state the
    parts share is `run` (a `TrainingRun`); the trainer itself keeps only the dual variables, the
    anchored start and the generator its samples are drawn from (seeded with `seed`).
    """

    def __init__(self, run: TrainingRun) -> None:
        """A trainer of `run` (`TrainingRun.of(experiment, controller, budget, config, seed)`)."""
        self.run = run
        self.duals = DualAscent(run)
        self.anchored: AnchoredStart | None = None  # what `anchor` cloned, always a final candidate
        # every sampled MAS of this run is drawn from here: nothing reads or writes torch's global random state
        self.generator = torch.Generator().manual_seed(run.seed)

    @property
    def controller(self) -> Controller:
        return self.run.controller

    @property
    def config(self) -> TrainConfig:
        return self.run.config

    @property
    def deltas(self) -> list[float]:
        """The difficulty offset of each target budget (the user's last): as configured, then as calibrated."""
        return self.run.deltas

    @property
    def embeddings(self) -> dict[str, torch.Tensor]:
        """The experiment's query embeddings by id."""
        return self.run.experiment.embeddings

    # ---- stages, in the order `train_on` runs them

    def pretrain_difficulty(self, queries: Sequence[Query]) -> float:
        """Fit the difficulty head to the solve-rate labels of the training items (`difficulty_labels`)."""
        return pretrain(self.run, queries)

    def anchor(self, train: Sequence[Query], val: Sequence[Query]) -> list[AnchorPlan]:
        """Start from the best plan that fits each target (`train.anchor.anchor`); returns the plan imitated
        per target (none without a budget)."""
        self.anchored = anchor(self.run, train, val)
        return self.anchored.plans if self.anchored is not None else []

    def restore(self, checkpoint: RestartCheckpoint) -> TrainResult:
        """A finished run from its restart checkpoint instead of training: its weights, configuration
        (the calibrated delta) and calibrated deltas per target; returns its result."""
        self.controller.config = checkpoint.controller
        self.controller.load_state_dict(checkpoint.state)
        result = checkpoint.result
        self.run.deltas = list(result.budget_range.deltas) if result.budget_range else [self.controller.config.delta]
        return result

    def train(
        self,
        train: Sequence[Query],
        val: Sequence[Query],
        test: Sequence[Query],
        on_epoch: Callable[[int, dict[str, float]], None] | None = None,
    ) -> TrainResult:
        """REINFORCE epochs with dual ascent after each, then delta calibration of the best candidates on
        validation; the test split is only measured for the report."""
        c, run = self.config, self.run
        generator = np.random.default_rng(run.seed)
        optimiser = torch.optim.Adam(
            [
                {"params": [p for n, p in self.controller.named_parameters() if not n.startswith("difficulty.")]},
                # the pretrained difficulty ranking is what lets delta spend a budget query by query:
                # end-to-end training refines it slowly instead of flattening it
                {
                    "params": list(self.controller.difficulty.parameters()),
                    "lr": c.learning_rate * c.difficulty_lr_scale,
                },
            ],
            lr=c.learning_rate,
        )
        history: list[dict[str, float]] = []
        snapshots: list[Snapshot] = []  # every epoch's weights and validation results: candidates to calibrate
        for epoch in range(c.epochs):
            rewards = []
            for rows in epoch_batches(len(train), c.batch_queries, generator):
                rewards.append(self._step([train[i] for i in rows], optimiser, generator))
            evaluations = [run.evaluate(val, target) for target in range(len(run.targets))]
            record = self._record(epoch, rewards, evaluations[-1])
            key = budget_score(evaluations, run.targets, c.fixed_penalties)
            if len(run.targets) > 1:
                record["feasible_budgets"] = key[0]
            history.append(record)
            if on_epoch is not None:
                on_epoch(epoch, record)
            snapshots.append(Snapshot(key, copy.deepcopy(self.controller.state_dict()), evaluations, epoch=epoch + 1))
            for target, evaluation in enumerate(evaluations):
                self.duals.update(evaluation, target)
        start = self.anchored
        calibrated, kept_epoch, score = calibrate_candidates(
            run,
            val,
            snapshots,
            start.snapshot if start is not None else None,
            start.margin if start is not None else 0.0,
        )
        run.deltas = [target.delta for target in calibrated]
        if run.budget_range is None:
            self.controller.config = dataclasses.replace(self.controller.config, delta=run.deltas[0])
        return self._result(calibrated, val, test, history, score, kept_epoch)

    def _record(self, epoch: int, rewards: Sequence[float], val_eval: Evaluation) -> dict[str, float]:
        """One line of the training history: the epoch's mean reward, validation results and lambdas."""
        lambda_tok, lambda_lat = self.duals.lambdas()
        return {
            "epoch": epoch + 1,
            "reward": float(np.mean(rewards)),
            "val_perf": val_eval.perf,
            "val_tok": val_eval.tok,
            "val_lat": val_eval.lat,
            "val_tok_upper": val_eval.tok_upper,
            "val_lat_upper": val_eval.lat_upper,
            "lambda_tok": lambda_tok,
            "lambda_lat": lambda_lat,
        }

    def _result(
        self,
        calibrated: list[Calibrated],
        val: Sequence[Query],
        test: Sequence[Query],
        history: list[dict[str, float]],
        score: tuple[int, float],
        kept_epoch: int,
    ) -> TrainResult:
        """The report of the kept weights (those of `kept_epoch`; 0: the anchored start): validation as
        calibrated, then (only now) the test split."""
        run, anchored = self.run, kept_epoch == 0
        feasible, judged = calibrated[-1].feasible, calibrated[-1].evaluation
        # the anchored start is judged by its cost on the training and validation questions; what it does on
        # validation alone is reported as validation, so `evaluate --split val` reproduces it
        targets = range(len(run.targets))
        on_val = [run.evaluate(val, t) for t in targets] if anchored else [target.evaluation for target in calibrated]
        val_eval = on_val[-1]
        lambda_tok, lambda_lat = self.duals.lambdas()
        points = []
        if run.budget_range is not None:
            for target, (ok, evaluation, delta) in enumerate(calibrated):
                points.append(
                    {
                        "budget": asdict(run.targets[target]),
                        "delta": delta,
                        "feasible": ok,
                        "val": asdict(on_val[target]),
                        **({"judged": asdict(evaluation)} if anchored else {}),
                        "test": asdict(run.evaluate(test, target)),
                    }
                )
        test_eval = run.evaluate(test)
        # the cheapest point reachable on the budget's axis (the fastest for a latency budget alone), for the report
        user_budget = run.targets[-1]
        cheapest = cheapest_mas(run.experiment, "lat" if user_budget.tok is None and user_budget.lat else "tok")
        cheapest_eval = measure(run.experiment, [cheapest] * len(val), val, self.config.confidence_z)
        return TrainResult(
            feasible=feasible,
            val=val_eval,
            test=test_eval,
            history=history,
            lambdas={"tok": lambda_tok, "lat": lambda_lat},
            cheapest=cheapest_eval,
            difficulty=difficulty_quality(run, test),
            budget_range=run.budget_range.with_deltas(run.deltas) if run.budget_range is not None else None,
            points=points,
            score=score,
            anchored=anchored,
            kept_epoch=kept_epoch,
            anchor_margin=self.anchored.margin if self.anchored is not None else 0.0,
            judged=judged if anchored else None,
        )

    def _step(self, batch: Sequence[Query], optimiser: torch.optim.Optimizer, generator: np.random.Generator) -> float:
        """One REINFORCE step: several samples per query, the per-query mean reward as baseline."""
        c, run = self.config, self.run
        samples = c.samples_per_query
        # each query trains under one target budget (always the same one without a range)
        drawn = generator.integers(len(run.targets), size=len(batch)) if len(run.targets) > 1 else [0] * len(batch)
        targets = [int(t) for t in drawn]
        query_embeddings = run.embed(batch)
        query_conditions = conditions([run.targets[t] for t in targets])
        step = self.controller(
            query_embeddings.repeat_interleave(samples, dim=0),
            query_conditions.repeat_interleave(samples, dim=0),
            mode="sample",
            generator=self.generator,
        )
        systems = self.controller.to_masses(step.decisions)
        outcomes = run.execute(sampled_pairs(systems, batch, samples))
        penalties = [Penalty(*self.duals.lambdas(t)) for t in range(len(run.targets))]
        reward = reward_matrix(outcomes, [penalties[t] for t in targets for _ in range(samples)], samples)
        loss = (
            policy_gradient_loss(reward, step.log_prob, step.entropy, c.entropy_bonus, targets)
            + c.length_penalty * step.expected_length.mean()
        )
        if self.anchored is not None and c.anchor_weight > 0:
            # keep imitating the anchored templates: one policy serves every target budget, and without this
            # pull a change that pays off at some budgets erases the template where it was the best choice
            pull = self.anchored.imitation_log_prob(self.controller, batch, query_embeddings, query_conditions, targets)
            loss = loss - c.anchor_weight * pull
        optimiser_step(optimiser, loss, list(self.controller.parameters()))
        return mean_reward(reward)
