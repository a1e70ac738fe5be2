"""Budget targeting: dual ascent on the lambdas during training, then delta calibrated on validation, per target.

It must never read the test split or gold answers beyond the validation results it is handed: every
choice it makes (lambdas, delta, which epoch to keep) stands on training and validation alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from agentbalance.budgets import Budget
from agentbalance.measuring import Evaluation
from agentbalance.policy.budget_input import budget_condition
from agentbalance.query import Query
from agentbalance.train.training_run import TrainingRun


class Calibrated(NamedTuple):
    """One target's calibration: whether it meets the budget, its validation evaluation, and the delta chosen."""

    feasible: bool
    evaluation: Evaluation
    delta: float


class DualAscent:
    """The lambdas of every target: fixed by hand, or kappa / budget with kappa adapted after each epoch
    until the upper confidence bound of the validation cost meets the budget."""

    def __init__(self, run: TrainingRun) -> None:
        self.run = run
        initial = run.config.initial_kappa
        self.kappas = [{"tok": initial, "lat": initial} for _ in run.targets]

    def lambdas(self, target: int = -1) -> tuple[float, float]:
        """lambda_tok, lambda_lat of a target budget: fixed by hand, or kappa / budget under dual ascent,
        or 0 without budget."""
        c, b, kappa = self.run.config, self.run.targets[target], self.kappas[target]
        tok = c.lambda_tok if c.lambda_tok is not None else (kappa["tok"] / b.tok if b.tok else 0.0)
        lat = c.lambda_lat if c.lambda_lat is not None else (kappa["lat"] / b.lat if b.lat else 0.0)
        return tok, lat

    def update(self, val: Evaluation, target: int = -1) -> None:
        """kappa <- max(0, kappa + step * (upper bound / budget - 1)) on each budgeted axis not fixed by hand."""
        c, b, kappa = self.run.config, self.run.targets[target], self.kappas[target]
        if b.tok is not None and c.lambda_tok is None:
            kappa["tok"] = max(0.0, kappa["tok"] + c.dual_step * (val.tok_upper / b.tok - 1))
        if b.lat is not None and c.lambda_lat is None:
            kappa["lat"] = max(0.0, kappa["lat"] + c.dual_step * (val.lat_upper / b.lat - 1))


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


def selection_key(score: tuple[int, float], anchored: bool, margin: float) -> tuple[int, float]:
    """The one-standard-error rule of model selection: validation Perf is noisy (a few questions decide
    between policies), so a trained policy replaces the anchored start (the best plan that
    fits) only when it meets as many budgets and wins by more than `margin`."""
    return score if anchored else (score[0], score[1] - margin)


def spend_slack(trials: dict[float, Evaluation], budget: Budget, z: float) -> Calibrated:
    """Choose delta from a validation sweep under budget targeting: the most generous delta whose upper
    cost bounds fit and whose Perf is within `z` standard errors of the best fitting Perf. On a few
    hundred validation questions Perf(delta) is flat within noise over a wide range, and "best, cheaper
    on ties" then settles far below the budget; a more generous delta sends more queries to the
    stronger pools, which is what the user's budget is for. Without a fitting delta: the least excess."""
    fitting = {delta: e for delta, e in trials.items() if e.meets(budget)}
    if not fitting:
        delta = max(trials, key=lambda d: budget_preference(trials[d], budget))
        return Calibrated(False, trials[delta], delta)
    best = max(fitting.values(), key=lambda e: (e.perf, -e.tok))
    floor = best.perf - z * best.perf_standard_error()
    delta = max(d for d, e in fitting.items() if e.perf >= floor)
    return Calibrated(True, fitting[delta], delta)


@dataclass(frozen=True)
class Snapshot:
    """One candidate's weights with its validation results (at each target budget, at the trained delta)."""

    key: tuple[int, float]  # (targets met, mean score): the ranking before calibration
    state: dict[str, torch.Tensor]
    evaluations: list[Evaluation]
    # the anchored start's evaluations with its cost measured on the training and validation questions,
    # which the final choice judges it by (`anchor.judged_with_known_cost`); None: `evaluations`
    judged: list[Evaluation] | None = None
    epoch: int = 0  # the training epoch that ended with these weights (1-based); 0: the anchored start

    def judged_evaluations(self) -> list[Evaluation]:
        """What the final choice ranks this candidate by, at each target."""
        return self.judged if self.judged is not None else self.evaluations

    def behaviour(self) -> tuple[tuple[float, float], ...]:
        """What the candidate's greedy policy did on validation: equal behaviours calibrate alike."""
        return tuple((round(e.perf, 6), round(e.tok, 9)) for e in self.evaluations)


def sweep_delta(
    run: TrainingRun, val: Sequence[Query], current: Evaluation, target: int = -1
) -> dict[float, Evaluation]:
    """Validation results over the difficulty offset delta, to spend the budget precisely (RouteLLM-style
    calibration of a threshold): a coarse grid first, then a finer one around the most costly delta
    that still fits. Without a budget (fixed lambdas) delta stays as given: only `current`."""
    budget = run.targets[target]
    trials: dict[float, Evaluation] = {run.deltas[target]: current}
    if budget.tok is None and budget.lat is None:
        return trials  # the paper's mode: delta is the user's knob

    def trial(delta: float) -> Evaluation:
        if delta not in trials:
            trials[delta] = run.evaluate(val, target, delta)
        return trials[delta]

    low, high = delta_range(run, val, target)
    for delta in np.linspace(low, high, 25):
        trial(round(float(delta), 6))
    fitting = [d for d, e in trials.items() if e.meets(budget)]
    if fitting:
        edge = max(fitting, key=lambda d: (trials[d].tok_upper, d))
        step = (high - low) / 24
        for delta in np.linspace(edge - step, edge + step, 9):
            trial(round(float(delta), 6))
    return trials


def best_delta(run: TrainingRun, trials: dict[float, Evaluation], target: int = -1) -> Calibrated:
    """The delta of a sweep with the best `budget_preference`: (meets the budget, evaluation, delta)."""
    budget = run.targets[target]
    best = max(trials, key=lambda delta: budget_preference(trials[delta], budget, run.config.fixed_penalties))
    return Calibrated(trials[best].meets(budget), trials[best], best)


def delta_range(run: TrainingRun, val: Sequence[Query], target: int = -1) -> tuple[float, float]:
    """The deltas between "every validation query in the cheapest pool" and "every one in the top
    pool", so the sweep crosses every pool mixture whatever the thresholds learned."""
    controller = run.controller
    selection = controller.selection
    if selection.pool_count == 1:
        return 0.0, 0.0
    with torch.no_grad():
        embeddings = run.embed(val)
        condition = budget_condition(run.targets[target], len(val))
        base = selection.effective_difficulty(controller.difficulty(embeddings), condition)
        thresholds = selection.thresholds()
    margin = 3 * selection.temperature
    return float(thresholds.min() - margin - base.max()), float(thresholds.max() + margin - base.min())


def calibrate_candidates(
    run: TrainingRun, val: Sequence[Query], snapshots: Sequence[Snapshot], anchored: Snapshot | None, margin: float
) -> tuple[list[Calibrated], int, tuple[int, float]]:
    """Which epoch to keep is decided after calibration, not before: an epoch a little over budget at
    the trained delta often beats every feasible one once delta is calibrated. The candidates: the
    anchored start (if any), the best epoch as trained, and the epochs of the highest mean validation
    Perf (distinct behaviours only); each is calibrated at every target (the anchored start is kept as
    imitated) and the one meeting the most budgets with the best mean Perf wins (validation only; the
    anchored start by the one-standard-error rule with `margin`, `selection_key`), each at its best delta.
    Under budget targeting the winner then spends its slack (`spend_slack`). Leaves the controller with
    the winner's weights; returns the calibrated (feasible, evaluation, delta) per target, the winner's epoch
    (0: the anchored start, or an epoch that behaves exactly like it), and its `budget_score` (at the best
    deltas: restarts compare it)."""

    def is_anchored(snapshot: Snapshot) -> bool:
        """The anchored start, or an epoch that behaves exactly like it on validation (training left it be)."""
        return anchored is not None and snapshot.behaviour() == anchored.behaviour()

    targets, penalties = range(len(run.targets)), run.config.fixed_penalties
    best_as_trained = max(snapshots, key=lambda snapshot: snapshot.key)
    by_perf = sorted(snapshots, key=lambda snapshot: -float(np.mean([e.perf for e in snapshot.evaluations])))
    candidates: list[Snapshot] = [best_as_trained]
    if anchored is not None and not is_anchored(best_as_trained):
        candidates.append(anchored)
    limit = len(candidates) - 1 + run.config.calibrated_candidates
    for snapshot in by_perf:
        if len(candidates) >= limit:
            break
        if all(snapshot.behaviour() != chosen.behaviour() for chosen in candidates):
            candidates.append(snapshot)
    best: tuple[tuple[int, float], Snapshot, list[dict[float, Evaluation]], tuple[int, float]] | None = None
    for snapshot in candidates:
        run.controller.load_state_dict(snapshot.state)
        if is_anchored(snapshot):
            # the templates as imitated: calibrating delta would turn them into a mixture whose cost
            # validation cannot vouch for (a few queries more or less in a costly pool on test)
            # (an epoch that behaves like it is judged like it: by the anchored start's measured cost)
            assert anchored is not None
            sweeps = [{run.deltas[target]: e} for target, e in enumerate(anchored.judged_evaluations())]
        else:
            sweeps = [sweep_delta(run, val, snapshot.evaluations[target], target) for target in targets]
        results = [best_delta(run, sweep, target) for target, sweep in enumerate(sweeps)]
        score = budget_score([result.evaluation for result in results], run.targets, penalties)
        key = selection_key(score, is_anchored(snapshot), margin)
        if best is None or key > best[0]:
            best = (key, snapshot, sweeps, score)
    assert best is not None
    _, winner, sweeps, score = best
    run.controller.load_state_dict(winner.state)
    if penalties == (0.0, 0.0):  # budget targeting: the winner spends what validation shows is free
        results = [
            spend_slack(sweep, budget, run.config.slack_z) for sweep, budget in zip(sweeps, run.targets, strict=True)
        ]
    else:  # a trade-off fixed by hand: its best delta, as ranked
        results = [best_delta(run, sweep, target) for target, sweep in enumerate(sweeps)]
    return results, 0 if is_anchored(winner) else winner.epoch, score
