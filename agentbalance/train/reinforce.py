"""Paper §3.3, end-to-end optimisation: REINFORCE on R = Perf - lambda_tok * Tok - lambda_lat * Lat.

Budget targeting goes beyond the paper's hand-tuned lambdas: the lambdas adapt by dual ascent until
an upper confidence bound of the validation cost meets the budget. Gold answers reach only the reward.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.evaluation.measure import CONFIDENCE_Z, Evaluation, summarise
from agentbalance.mas import MAS
from agentbalance.policy.condition import budget_condition, conditions
from agentbalance.policy.controller import Controller, Decisions
from agentbalance.policy.difficulty import pretrain_difficulty
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.rollout import Outcome, SyncWorld, execute
from agentbalance.templates import topology_mas
from agentbalance.train.policy_gradient import (
    Penalty,
    PolicyGradientConfig,
    epoch_batches,
    mean_reward,
    optimiser_step,
    policy_gradient_loss,
)

# the templates an anchored start may imitate besides a backbone alone: those the controller can construct
ANCHOR_TOPOLOGIES = ("chain", "star", "layered")


@dataclass(frozen=True)
class TrainConfig(PolicyGradientConfig):
    """Knobs of training; the defaults finish `build` on the simulated world in a few minutes on 2 cores."""

    epochs: int = 25
    samples_per_query: int = 6
    length_penalty: float = 0.02  # lambda_len on L_max
    dual_step: float = 0.3  # step of the dual ascent on the dimensionless penalties kappa
    initial_kappa: float = 0.3  # lambda = kappa / budget: a penalty of kappa at exactly the budget
    confidence_z: float = CONFIDENCE_Z  # the safety margin: one-sided 95% upper bound of the validation mean
    lambda_tok: float | None = None  # fixed lambdas (the paper's mode): no dual ascent on that axis
    lambda_lat: float | None = None
    pretrain_steps: int = 400
    calibrated_candidates: int = 3  # epochs whose delta is calibrated before the final choice
    anchor_steps: int = 300  # behaviour-cloning steps of an anchored start (see `Trainer.anchor`)
    anchor_learning_rate: float = 1e-2
    anchor_margin_z: float = 1.0  # a trained policy replaces the anchored start if it wins by this many SEs
    slack_z: float = 1.0  # delta spends the budget: the most generous one within this many SEs of the best Perf
    anchor_weight: float = 0.1  # weight of imitating the anchored start during REINFORCE (0: none)
    difficulty_lr_scale: float = 0.1  # the difficulty head's end-to-end learning rate, relative


@dataclass
class TrainResult:
    feasible: bool
    val: Evaluation
    test: Evaluation
    history: list[dict[str, float]]
    lambdas: dict[str, float]
    cheapest: Evaluation
    difficulty: dict[str, object] = field(default_factory=dict)  # rank correlation on the test split
    budget_range: BudgetRange | None = None  # budget-conditioned: the range served, with calibrated deltas
    points: list[dict[str, object]] = field(default_factory=list)  # budget-conditioned: each grid budget
    score: tuple[int, float] = (0, 0.0)  # `budget_score` on validation at the best deltas: restarts compare it
    anchored: bool = False  # the weights kept are the anchored start itself (no REINFORCE epoch beat it)
    anchor_margin: float = 0.0  # what a trained policy must win by on validation to replace the anchored start

    def selection_key(self, margin: float) -> tuple[int, float]:
        """`score` with the one-standard-error rule: a trained policy pays `margin`, the anchored start not."""
        return selection_key(self.score, self.anchored, margin)

    def to_json(self) -> dict[str, object]:
        document = asdict(self)
        document["budget_range"] = self.budget_range.to_json() if self.budget_range is not None else None
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> TrainResult:
        """The inverse of `to_json` (a restart checkpoint); malformed input raises KeyError/TypeError."""
        saved_range = document["budget_range"]
        return cls(
            feasible=bool(document["feasible"]),
            val=Evaluation(**document["val"]),
            test=Evaluation(**document["test"]),
            history=list(document["history"]),
            lambdas=dict(document["lambdas"]),
            cheapest=Evaluation(**document["cheapest"]),
            difficulty=dict(document["difficulty"]),
            budget_range=BudgetRange.from_json(saved_range) if saved_range is not None else None,
            points=list(document["points"]),
            score=(int(document["score"][0]), float(document["score"][1])),
            anchored=bool(document["anchored"]),
            anchor_margin=float(document["anchor_margin"]),
        )


def budget_preference(
    evaluation: Evaluation, budget: Budget, penalties: tuple[float, float] = (0.0, 0.0)
) -> tuple[bool, float]:
    """Rank two policies under one budget: meeting it (upper bounds) first, then Perf minus the penalties
    fixed by hand (lambda_tok, lambda_lat; none under budget targeting), the cheaper one on a tie; a
    policy that misses the budget counts minus its relative excess."""
    if not evaluation.meets(budget):
        return False, -evaluation.excess(budget)
    tok_penalty, lat_penalty = penalties
    return True, evaluation.perf - tok_penalty * evaluation.tok - lat_penalty * evaluation.lat - 1e-6 * evaluation.tok


def budget_score(
    evaluations: Sequence[Evaluation], budgets: Sequence[Budget], penalties: tuple[float, float] = (0.0, 0.0)
) -> tuple[int, float]:
    """How well evaluations meet their budgets, to rank epochs and restarts on validation: the budgets met,
    then the mean `budget_preference` value."""
    preferences = [budget_preference(e, b, penalties) for e, b in zip(evaluations, budgets, strict=True)]
    return sum(met for met, _ in preferences), float(np.mean([value for _, value in preferences]))


def spend_slack(trials: dict[float, Evaluation], budget: Budget, z: float) -> tuple[bool, Evaluation, float]:
    """Choose delta from a validation sweep under budget targeting: the most generous delta whose upper
    cost bounds fit and whose Perf is within `z` standard errors of the best fitting Perf. On a few
    hundred validation questions Perf(delta) is flat within noise over a wide range, and "best, cheaper
    on ties" then settles far below the budget; a more generous delta sends more queries to the
    stronger pools, which is what the user's budget is for. Without a fitting delta: the least excess."""
    fitting = {delta: e for delta, e in trials.items() if e.meets(budget)}
    if not fitting:
        delta = max(trials, key=lambda d: budget_preference(trials[d], budget))
        return False, trials[delta], delta
    best = max(fitting.values(), key=lambda e: (e.perf, -e.tok))
    floor = best.perf - z * best.perf_standard_error()
    delta = max(d for d, e in fitting.items() if e.perf >= floor)
    return True, fitting[delta], delta


def selection_key(score: tuple[int, float], anchored: bool, margin: float) -> tuple[int, float]:
    """The one-standard-error rule of model selection: validation Perf is noisy (a few questions decide
    between policies), so a trained policy replaces the anchored start (the best single backbone that
    fits) only when it meets as many budgets and wins by more than `margin`."""
    return score if anchored else (score[0], score[1] - margin)


@dataclass(frozen=True)
class _Snapshot:
    """One epoch's weights with its validation results (at each target budget, at the trained delta)."""

    key: tuple[int, float]  # (targets met, mean score): the ranking before calibration
    state: dict[str, torch.Tensor]
    evaluations: list[Evaluation]

    def behaviour(self) -> tuple[tuple[float, float], ...]:
        """What the epoch's greedy policy did on validation: equal behaviours calibrate alike."""
        return tuple((round(e.perf, 6), round(e.tok, 9)) for e in self.evaluations)


class Trainer:
    """Trains one controller in one synchronous world on fixed splits, for one budget or a budget range.

    With a range, each training query is given a random grid budget as condition and the reward of
    that budget; every grid budget has its own dual variables and its own calibrated delta.
    """

    def __init__(
        self,
        controller: Controller,
        world: SyncWorld,
        roles: RoleSet,
        embeddings: dict[str, torch.Tensor],
        budget: Budget,
        config: TrainConfig | None = None,
        grader: Callable[[Query, str | None], bool | None] | None = None,
        budget_range: BudgetRange | None = None,
        seed: int = 0,
    ) -> None:
        self.seed = seed  # of this training run's own draws (batches, imitation rows)
        self.grader = grader  # the task's scorer, for worlds that do not grade (live)
        self.controller = controller
        self.world = world
        self.roles = roles
        self.embeddings = embeddings
        self.budget = budget_range.loosest if budget_range is not None else budget
        self.budget_range = budget_range
        self.config = config or TrainConfig()
        # the budgets trained for, the user's (loosest) last; one set of dual variables and one delta each
        self.targets = budget_range.budgets() if budget_range is not None else [self.budget]
        self.kappas = [{"tok": self.config.initial_kappa, "lat": self.config.initial_kappa} for _ in self.targets]
        self.deltas = [controller.config.delta for _ in self.targets]
        self.anchored: _Snapshot | None = None  # the start `anchor` cloned, always a final candidate
        self.anchor_margin = 0.0  # one standard error of the anchored start's validation Perf (x anchor_margin_z)
        self.imitated: Decisions | None = None  # the anchored start's template per target, rows = targets

    # ---- lambdas

    @property
    def penalties(self) -> tuple[float, float]:
        """The lambdas fixed by hand (0 on an axis under budget targeting): part of the objective that
        ranks epochs, deltas and restarts on validation."""
        return self.config.lambda_tok or 0.0, self.config.lambda_lat or 0.0

    def lambdas(self, target: int = -1) -> tuple[float, float]:
        """lambda_tok, lambda_lat of a target budget: fixed by hand, or kappa / budget under dual ascent,
        or 0 without budget."""
        c, b, kappa = self.config, self.targets[target], self.kappas[target]
        tok = c.lambda_tok if c.lambda_tok is not None else (kappa["tok"] / b.tok if b.tok else 0.0)
        lat = c.lambda_lat if c.lambda_lat is not None else (kappa["lat"] / b.lat if b.lat else 0.0)
        return tok, lat

    def dual_update(self, val: Evaluation, target: int = -1) -> None:
        """kappa <- max(0, kappa + step * (upper bound / budget - 1)) on each budgeted axis not fixed by hand."""
        c, b, kappa = self.config, self.targets[target], self.kappas[target]
        if b.tok is not None and c.lambda_tok is None:
            kappa["tok"] = max(0.0, kappa["tok"] + c.dual_step * (val.tok_upper / b.tok - 1))
        if b.lat is not None and c.lambda_lat is None:
            kappa["lat"] = max(0.0, kappa["lat"] + c.dual_step * (val.lat_upper / b.lat - 1))

    # ---- stages

    def solve_rates(self, queries: Sequence[Query]) -> list[float]:
        """The fraction of the pool backbones that solve each item alone (gold is used: training and
        reporting only, never at inference)."""
        decision = self.roles.decision
        names = self.controller.context.backbone_names
        singles = [MAS.single(decision.name, n) for n in names]
        outcomes = self.execute([(single, query) for query in queries for single in singles])
        return [solve_rate(outcomes[i * len(names) : (i + 1) * len(names)]) for i in range(len(queries))]

    def pretrain_difficulty(self, queries: Sequence[Query]) -> float:
        """Label each training item by the fraction of the pool backbones that solve it alone."""
        rates = torch.tensor(self.solve_rates(queries), dtype=torch.float32)
        return pretrain_difficulty(self.controller.difficulty, self._embed(queries), rates, self.config.pretrain_steps)

    def difficulty_quality(self, queries: Sequence[Query]) -> dict[str, object]:
        """Spearman rank correlation of the estimated difficulty with the true one (1 - solve rate),
        overall and per domain label (the domain is used for this report only)."""
        with torch.no_grad():
            predicted = self.controller.difficulty(self._embed(queries)).numpy()
        truth = 1.0 - np.array(self.solve_rates(queries))
        domains = sorted({q.domain or "unlabelled" for q in queries})
        per_domain = {}
        for domain in domains:
            rows = np.array([(q.domain or "unlabelled") == domain for q in queries])
            per_domain[domain] = {"n": int(rows.sum()), "spearman": _spearman(predicted[rows], truth[rows])}
        return {"n": len(queries), "spearman": _spearman(predicted, truth), "per_domain": per_domain}

    def anchor(self, train: Sequence[Query], val: Sequence[Query]) -> list[MAS]:
        """An anchored start: imitate, under each target budget's condition, the best MAS template that fits
        that budget on the training and validation questions: every kept backbone alone, and the role
        library on one backbone wired as a chain, a star or layers (`ANCHOR_TOPOLOGIES`, the templates the
        controller can construct).

        REINFORCE then starts from a policy that already meets the budget with a good Perf, and this
        start stays a candidate of the final choice on validation, so training replaces it only with
        something better there (by the margin of `selection_key`). Without it a run sometimes ends below
        the best single backbone that fits: reward noise spreads queries over weaker backbones. Returns
        the template imitated per target; with no budget (fixed lambdas, the paper's mode) nothing fits
        or misses and nothing is imitated."""
        if all(budget.tok is None and budget.lat is None for budget in self.targets):
            return []
        names = self.controller.context.backbone_names
        templates = [MAS.single(self.roles.decision.name, name) for name in names] + [
            topology_mas(kind, self.roles, name) for kind in ANCHOR_TOPOLOGIES for name in names
        ]
        # the templates learn nothing from the training split: measured on it too, they are told apart
        # by 3-4x the questions (validation alone often ranks two close backbones the wrong way round)
        measured = [*train, *val]
        outcomes = self.execute([(template, query) for template in templates for query in measured])
        n = len(measured)
        evaluations = [
            summarise([template] * n, outcomes[i * n : (i + 1) * n], self.config.confidence_z)
            for i, template in enumerate(templates)
        ]
        chosen = [
            templates[
                max(
                    range(len(templates)),
                    key=lambda i, budget=budget: budget_preference(evaluations[i], budget, self.penalties),
                )
            ]
            for budget in self.targets
        ]
        self.imitated = self.controller.decisions_of(chosen)
        self._imitate(train, self.imitated)
        evaluations = [self.evaluate(val, target) for target in range(len(self.targets))]
        self.anchored = _Snapshot(
            budget_score(evaluations, self.targets, self.penalties),
            copy.deepcopy(self.controller.state_dict()),
            evaluations,
        )
        self.anchor_margin = self.config.anchor_margin_z * float(
            np.mean([e.perf_standard_error() for e in evaluations])
        )
        return chosen

    def _imitate(self, train: Sequence[Query], decisions_of_target: Decisions) -> None:
        """Maximise the exact log-probability of each target's decisions under its condition, for every
        training query. The difficulty head stays frozen: its ranking is what delta calibration later
        spends the budget with."""
        c = self.config
        generator = np.random.default_rng(self.seed)
        parameters = [p for n, p in self.controller.named_parameters() if not n.startswith("difficulty.")]
        optimiser = torch.optim.Adam(parameters, lr=c.anchor_learning_rate)
        for _ in range(c.anchor_steps):
            rows = generator.choice(len(train), size=min(c.batch_queries, len(train)), replace=False)
            targets = generator.integers(len(self.targets), size=len(rows))
            given = decisions_of_target.take(torch.as_tensor(targets))
            condition = conditions([self.targets[t] for t in targets])
            step = self.controller(self._embed([train[i] for i in rows]), condition, mode="given", given=given)
            loss = -step.log_prob.mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()

    def train(
        self,
        train: Sequence[Query],
        val: Sequence[Query],
        test: Sequence[Query],
        on_epoch: Callable[[int, dict[str, float]], None] | None = None,
    ) -> TrainResult:
        c = self.config
        generator = np.random.default_rng(self.seed)
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
        snapshots: list[_Snapshot] = []  # every epoch's weights and validation results: candidates to calibrate
        for epoch in range(c.epochs):
            rewards = []
            for rows in epoch_batches(len(train), c.batch_queries, generator):
                rewards.append(self._step([train[i] for i in rows], optimiser, generator))
            evaluations = [self.evaluate(val, target) for target in range(len(self.targets))]
            val_eval = evaluations[-1]
            lambda_tok, lambda_lat = self.lambdas()
            record = {
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
            key = budget_score(evaluations, self.targets, self.penalties)
            if len(self.targets) > 1:
                record["feasible_budgets"] = key[0]
            history.append(record)
            if on_epoch is not None:
                on_epoch(epoch, record)
            snapshots.append(_Snapshot(key, copy.deepcopy(self.controller.state_dict()), evaluations))
            for target, evaluation in enumerate(evaluations):
                self.dual_update(evaluation, target)
        calibrated, anchored, score = self._calibrate_candidates(val, snapshots)
        self.deltas = [delta for _, _, delta in calibrated]
        if self.budget_range is None:
            self.controller.config = dataclasses.replace(self.controller.config, delta=self.deltas[0])
        feasible, val_eval, _ = calibrated[-1]
        lambda_tok, lambda_lat = self.lambdas()
        points = []
        if self.budget_range is not None:
            for target, (ok, evaluation, delta) in enumerate(calibrated):
                points.append(
                    {
                        "budget": asdict(self.targets[target]),
                        "delta": delta,
                        "feasible": ok,
                        "val": asdict(evaluation),
                        "test": asdict(self.evaluate(test, target)),
                    }
                )
        return TrainResult(
            feasible=feasible,
            val=val_eval,
            test=self.evaluate(test),
            history=history,
            lambdas={"tok": lambda_tok, "lat": lambda_lat},
            cheapest=self.cheapest(val),
            difficulty=self.difficulty_quality(test),
            budget_range=self.budget_range.with_deltas(self.deltas) if self.budget_range is not None else None,
            points=points,
            score=score,
            anchored=anchored,
            anchor_margin=self.anchor_margin,
        )

    def _calibrate_candidates(
        self, val: Sequence[Query], snapshots: Sequence[_Snapshot]
    ) -> tuple[list[tuple[bool, Evaluation, float]], bool, tuple[int, float]]:
        """Which epoch to keep is decided after calibration, not before: an epoch a little over budget at
        the trained delta often beats every feasible one once delta is calibrated. The candidates: the
        anchored start (if any), the best epoch as trained, and the epochs of the highest mean validation
        Perf (distinct behaviours only); each is calibrated at every target (the anchored start is kept as
        imitated) and the one meeting the most budgets with the best mean Perf wins (validation only; the
        anchored start by the one-standard-error rule, `selection_key`), each at its best delta. Under budget
        targeting the winner then spends its slack (`spend_slack`). Leaves the controller with the winner's
        weights; returns the calibrated (feasible, evaluation, delta) per target, whether the winner is the
        anchored start, and its `budget_score` (at the best deltas: restarts compare it)."""
        best_as_trained = max(snapshots, key=lambda snapshot: snapshot.key)
        by_perf = sorted(snapshots, key=lambda snapshot: -float(np.mean([e.perf for e in snapshot.evaluations])))
        candidates: list[_Snapshot] = [best_as_trained]
        if self.anchored is not None and not self._is_anchored(best_as_trained):
            candidates.append(self.anchored)
        limit = len(candidates) - 1 + self.config.calibrated_candidates
        for snapshot in by_perf:
            if len(candidates) >= limit:
                break
            if all(snapshot.behaviour() != chosen.behaviour() for chosen in candidates):
                candidates.append(snapshot)
        best: tuple[tuple[int, float], _Snapshot, list[dict[float, Evaluation]], tuple[int, float]] | None = None
        for snapshot in candidates:
            self.controller.load_state_dict(snapshot.state)
            if self._is_anchored(snapshot):
                # the templates as imitated: calibrating delta would turn them into a mixture whose cost
                # validation cannot vouch for (a few queries more or less in a costly pool on test)
                sweeps = [{self.deltas[target]: e} for target, e in enumerate(snapshot.evaluations)]
            else:
                sweeps = [
                    self.sweep_delta(val, snapshot.evaluations[target], target) for target in range(len(self.targets))
                ]
            results = [self.best_delta(sweep, target) for target, sweep in enumerate(sweeps)]
            score = budget_score([e for _, e, _ in results], self.targets, self.penalties)
            key = selection_key(score, self._is_anchored(snapshot), self.anchor_margin)
            if best is None or key > best[0]:
                best = (key, snapshot, sweeps, score)
        assert best is not None
        _, winner, sweeps, score = best
        self.controller.load_state_dict(winner.state)
        if self.penalties == (0.0, 0.0):  # budget targeting: the winner spends what validation shows is free
            results = [
                spend_slack(sweep, budget, self.config.slack_z)
                for sweep, budget in zip(sweeps, self.targets, strict=True)
            ]
        else:  # a trade-off fixed by hand: its best delta, as ranked
            results = [self.best_delta(sweep, target) for target, sweep in enumerate(sweeps)]
        return results, self._is_anchored(winner), score

    def _is_anchored(self, snapshot: _Snapshot) -> bool:
        """The anchored start, or an epoch that behaves exactly like it on validation (training left it be)."""
        return self.anchored is not None and snapshot.behaviour() == self.anchored.behaviour()

    def sweep_delta(self, val: Sequence[Query], current: Evaluation, target: int = -1) -> dict[float, Evaluation]:
        """Validation results over the difficulty offset delta, to spend the budget precisely (RouteLLM-style
        calibration of a threshold): a coarse grid first, then a finer one around the most costly delta
        that still fits. Without a budget (fixed lambdas) delta stays as given: only `current`."""
        budget = self.targets[target]
        trials: dict[float, Evaluation] = {self.deltas[target]: current}
        if budget.tok is None and budget.lat is None:
            return trials  # the paper's mode: delta is the user's knob

        def trial(delta: float) -> Evaluation:
            if delta not in trials:
                trials[delta] = self.evaluate(val, target, delta)
            return trials[delta]

        low, high = self._delta_range(val, target)
        for delta in np.linspace(low, high, 25):
            trial(round(float(delta), 6))
        fitting = [d for d, e in trials.items() if e.meets(budget)]
        if fitting:
            edge = max(fitting, key=lambda d: (trials[d].tok_upper, d))
            step = (high - low) / 24
            for delta in np.linspace(edge - step, edge + step, 9):
                trial(round(float(delta), 6))
        return trials

    def best_delta(self, trials: dict[float, Evaluation], target: int = -1) -> tuple[bool, Evaluation, float]:
        """The delta of a sweep with the best `budget_preference`: (meets the budget, evaluation, delta)."""
        budget = self.targets[target]
        best = max(trials, key=lambda delta: budget_preference(trials[delta], budget, self.penalties))
        return trials[best].meets(budget), trials[best], best

    def _delta_range(self, val: Sequence[Query], target: int = -1) -> tuple[float, float]:
        """The deltas between "every validation query in the cheapest pool" and "every one in the top
        pool", so the sweep crosses every pool mixture whatever the thresholds learned."""
        selection = self.controller.selection
        if selection.pool_count == 1:
            return 0.0, 0.0
        with torch.no_grad():
            embeddings = self._embed(val)
            condition = budget_condition(self.targets[target], len(val))
            base = (
                self.controller.difficulty(embeddings)
                + selection.offset
                + selection.condition_offset(condition).squeeze(-1)
            )
            thresholds = selection.thresholds()
        margin = 3 * selection.temperature
        return float(thresholds.min() - margin - base.max()), float(thresholds.max() + margin - base.min())

    def _step(self, batch: Sequence[Query], optimiser: torch.optim.Optimizer, generator: np.random.Generator) -> float:
        """One REINFORCE step: several samples per query, the per-query mean reward as baseline."""
        c = self.config
        samples = c.samples_per_query
        # each query trains under one target budget (always the same one without a range)
        drawn = generator.integers(len(self.targets), size=len(batch)) if len(self.targets) > 1 else [0] * len(batch)
        targets = [int(t) for t in drawn]
        query_embeddings = self._embed(batch)
        query_conditions = conditions([self.targets[t] for t in targets])
        rows = [t for t in targets for _ in range(samples)]  # the target of each sample, query-major
        step = self.controller(
            query_embeddings.repeat_interleave(samples, dim=0),
            query_conditions.repeat_interleave(samples, dim=0),
            mode="sample",
        )
        lambdas = [self.lambdas(t) for t in range(len(self.targets))]
        masses = self.controller.to_masses(step.decisions)
        outcomes = self.execute([(mas, batch[index // samples]) for index, mas in enumerate(masses)])
        penalties = [Penalty(*lambdas[t]) for t in range(len(self.targets))]
        rewards = [penalties[t].reward(o) for o, t in zip(outcomes, rows, strict=True)]
        reward = torch.tensor(rewards, dtype=torch.float64).view(len(batch), samples)
        loss = (
            policy_gradient_loss(reward, step.log_prob, step.entropy, c.entropy_bonus, targets)
            + c.length_penalty * step.expected_length.mean()
        )
        if self.imitated is not None and c.anchor_weight > 0:
            # keep imitating the anchored templates: one policy serves every target budget, and without this
            # pull a change that pays off at some budgets erases the template where it was the best choice
            given = self.imitated.take(torch.as_tensor(targets))
            imitation = self.controller(query_embeddings, query_conditions, mode="given", given=given)
            loss = loss - c.anchor_weight * imitation.log_prob.mean()
        optimiser_step(optimiser, loss, list(self.controller.parameters()))
        return mean_reward(reward)

    # ---- evaluation

    def evaluate(self, queries: Sequence[Query], target: int = -1, delta: float | None = None) -> Evaluation:
        """Greedy construction under a target budget's condition and delta (or the delta given)."""
        return summarise(*self.outcomes(queries, target, delta), self.config.confidence_z)

    def outcomes(
        self, queries: Sequence[Query], target: int = -1, delta: float | None = None
    ) -> tuple[list[MAS], list[Outcome]]:
        """What `evaluate` summarises, query by query."""
        return policy_outcomes(
            self.controller,
            self.world,
            self.roles,
            self.embeddings,
            queries,
            self.targets[target],
            self.grader,
            self.deltas[target] if delta is None else delta,
        )

    def execute(self, pairs: Sequence[tuple[MAS, Query]]) -> list[Outcome]:
        return execute(self.world, self.roles, pairs, self.grader)

    def cheapest(self, queries: Sequence[Query]) -> Evaluation:
        """The cheapest point reachable: the decision agent alone on the cheapest pool's cheapest backbone."""
        ctx = self.controller.context
        cheapest = ctx.backbone_names[int(torch.argmin(ctx.backbone_tok_cost))]
        single = MAS.single(self.roles.decision.name, cheapest)
        outcomes = self.execute([(single, q) for q in queries])
        return summarise([single] * len(queries), outcomes, self.config.confidence_z)

    def _embed(self, queries: Sequence[Query]) -> torch.Tensor:
        return torch.stack([self.embeddings[q.id] for q in queries])


def policy_outcomes(
    controller: Controller,
    world: SyncWorld,
    roles: RoleSet,
    embeddings: dict[str, torch.Tensor],
    queries: Sequence[Query],
    budget: Budget,
    grader: Callable[[Query, str | None], bool | None] | None = None,
    delta: float | None = None,
) -> tuple[list[MAS], list[Outcome]]:
    """Greedy construction for each query (under `budget` as condition) and its outcome in the world,
    query by query (paired comparisons need them, not only the means)."""
    stacked = torch.stack([embeddings[q.id] for q in queries])
    condition = budget_condition(budget, len(queries))
    masses = controller.construct(stacked, condition, [q.id for q in queries], delta=delta)
    return masses, execute(world, roles, list(zip(masses, queries, strict=True)), grader)


def solve_rate(outcomes: Sequence[Outcome]) -> float:
    """The fraction of graded runs that are right (0.5, no information, when none could be graded)."""
    graded = [o.correct for o in outcomes if o.correct is not None]
    return sum(graded) / len(graded) if graded else 0.5


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Rank correlation (average ranks for ties); None when either side is constant or too short."""
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    import pandas as pd

    return float(pd.Series(a).rank().corr(pd.Series(b).rank()))
