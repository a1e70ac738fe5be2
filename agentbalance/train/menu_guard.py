"""The menu guard: per target budget, keep the trained policy only where it beats the best plan of a menu.

A practitioner with recorded answers scores a menu of plans (every kept backbone alone, the role library on one
backbone as a chain, a star or layers, every agreement cascade, majority votes) and takes the best that fits. The
learned per-query policy is the product's most complex part; it must at least match that. So, per target budget:

1. **The plan.** The best plan of the menu that fits the budget on the training and validation questions (upper
   cost bounds, as every budget here is judged). It serves every query of that budget when the policy loses.
2. **Its honest score.** Picking the best of hundreds of plans on a few hundred questions flatters the winner
   (the winner's curse). What the *selection* is worth is measured by K-fold cross-validation over the training
   and validation questions: on each fold, the plan picked on the other folds answers the fold's questions. Each
   validation question is thus answered by a plan chosen without it.
3. **The comparison.** On the validation questions, which the policy never trained on, the policy's answers
   against those held-out picks, paired question by question: the policy is kept only when it wins by more than
   `anchor_margin_z` standard errors of the paired difference (the one-standard-error rule every other choice of
   `build` follows), and only when it meets the budget on validation too. Otherwise the plan is kept.

It never reads the test split. Nothing here trains: it decides, after training, what each budget is served by.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agentbalance.budgets import Budget
from agentbalance.mas import MAS
from agentbalance.measuring import measure, policy_outcomes, scores_of, summarise, upper_bounds
from agentbalance.query import Query
from agentbalance.runtime.execution import Outcome
from agentbalance.splits import Splits
from agentbalance.templates import VOTE_SAMPLES, vote_mas
from agentbalance.train.anchor import PlanMenu, anchor_templates
from agentbalance.train.config import TrainResult
from agentbalance.train.training_run import TrainingRun

GUARD_FOLDS = 5  # folds of the cross-validation that scores the menu's selection


@dataclass(frozen=True)
class MenuScores:
    """The menu's plans measured on the training and validation questions: per plan (rows) and question (columns),
    the quality score (right/wrong tasks: 1 or 0) or nan (ungraded), and the cost in Tok (USD per 100 queries) and
    Lat (s)."""

    plans: list[MAS]
    score: np.ndarray  # [plans, questions]
    tok: np.ndarray
    lat: np.ndarray

    @classmethod
    def of(cls, plans: Sequence[MAS], outcomes: Sequence[Outcome], questions: int) -> MenuScores:
        """From the outcomes of every plan on every question, plan by plan."""
        shape = (len(plans), questions)
        tok = np.array([100 * o.cost_usd for o in outcomes]).reshape(shape)
        lat = np.array([o.latency_s for o in outcomes]).reshape(shape)
        return cls(list(plans), scores_of(outcomes).reshape(shape), tok, lat)

    def best_fitting(self, budget: Budget, columns: np.ndarray, z: float) -> int | None:
        """The plan of the best Perf on `columns` (question indices) whose upper cost bounds there fit `budget`,
        the cheaper on a tie; None when none fits."""
        fits = np.ones(len(self.plans), dtype=bool)
        for costs, limit in ((self.tok, budget.tok), (self.lat, budget.lat)):
            if limit is not None:
                fits &= upper_bounds(costs[:, columns], z) <= limit
        if not fits.any():
            return None
        perf = graded_means(self.score[:, columns])
        candidates = np.flatnonzero(fits)
        return int(min(candidates, key=lambda p: (-perf[p], self.tok[p, columns].mean())))


def graded_means(scores: np.ndarray) -> np.ndarray:
    """Each row's mean over its graded entries (0 where none is graded)."""
    graded = ~np.isnan(scores)
    counts = graded.sum(axis=1)
    return np.where(counts > 0, np.nansum(scores, axis=1) / np.maximum(counts, 1), 0.0)


def fold_of(questions: int, seed: int, folds: int = GUARD_FOLDS) -> np.ndarray:
    """Each question's fold, dealt at random (seeded by the run) so every fold mixes training and validation."""
    order = np.random.default_rng(seed).permutation(questions)
    assigned = np.empty(questions, dtype=int)
    assigned[order] = np.arange(questions) % folds
    return assigned


def held_out_picks(scores: MenuScores, budget: Budget, folds: np.ndarray, z: float) -> np.ndarray | None:
    """Per question, the plan picked on the other folds (`best_fitting`), or None when on some fold nothing fits
    (the menu cannot be relied on to fit this budget)."""
    picks = np.empty(len(folds), dtype=int)
    for fold in np.unique(folds):
        pick = scores.best_fitting(budget, np.flatnonzero(folds != fold), z)
        if pick is None:
            return None
        picks[folds == fold] = pick
    return picks


def policy_wins(policy: np.ndarray, menu: np.ndarray, margin_z: float) -> tuple[bool, float, float]:
    """Whether the policy's answers beat the menu's on the same questions (scores, nan ungraded) by more than
    `margin_z` standard errors of the paired difference; with the mean difference and that margin."""
    both = ~np.isnan(policy) & ~np.isnan(menu)
    if not both.any():
        return False, 0.0, 0.0
    difference = policy[both] - menu[both]
    spread = float(difference.std(ddof=1)) if difference.size > 1 else 0.0
    margin = margin_z * spread / math.sqrt(difference.size)
    return float(difference.mean()) > margin, float(difference.mean()), margin


@dataclass(frozen=True)
class GuardDecision:
    """What serves one target budget: the trained policy, or (`plan` not None) one plan for every query."""

    budget: Budget
    plan: MAS | None  # None: the trained policy
    candidate: MAS | None  # the menu's best fitting plan (None: no plan fits on every fold)
    policy_val_perf: float
    menu_val_perf: float | None  # the held-out picks' Perf on the validation questions
    difference: float  # policy minus menu, paired, on the validation questions
    margin: float  # what the policy had to win by

    def to_json(self) -> dict[str, Any]:
        return {
            "budget": {"tok": self.budget.tok, "lat": self.budget.lat},
            "served_by": "policy" if self.plan is None else "plan",
            "plan": self.candidate.to_json() if self.candidate is not None else None,
            "policy_val_perf": self.policy_val_perf,
            "menu_val_perf": self.menu_val_perf,
            "difference": self.difference,
            "margin": self.margin,
        }


def menu_of(run: TrainingRun) -> list[MAS]:
    """The anchored start's templates (the kept backbones alone, their chains, stars and layers, every agreement
    cascade) and every kept backbone's majority vote of `VOTE_SAMPLES` samples."""
    roles = run.experiment.roles
    if all(role.name == roles.decision.name for role in roles):  # a vote needs an answering role
        return anchor_templates(run)
    votes = [vote_mas(roles, name, k) for name in run.controller.context.backbone_names for k in VOTE_SAMPLES]
    return [*anchor_templates(run), *votes]


def guard(
    run: TrainingRun, train: Sequence[Query], val: Sequence[Query], known: PlanMenu | None = None
) -> list[GuardDecision]:
    """Per target budget of `run` (its calibrated deltas in place), whether the trained policy or the menu's best
    fitting plan serves it (see the module docstring). Without a budget (penalties fixed by hand) nothing fits or
    misses: the policy serves, and no plan is measured. `known`: the anchored start's menu on the same questions,
    whose templates are not run again."""
    if all(budget.tok is None and budget.lat is None for budget in run.targets):
        return []
    measured = [*train, *val]
    plans = menu_of(run)
    known_outcomes = known.outcomes if known is not None else []
    reused = [plan.easy for plan in known.alone] if known is not None and known_outcomes else []
    if [plan.to_json() for plan in reused] != [plan.to_json() for plan in plans[: len(reused)]]:
        reused, known_outcomes = [], []  # another menu (or none): measure every plan
    fresh = plans[len(reused) :]
    outcomes = [*known_outcomes, *run.execute([(plan, query) for plan in fresh for query in measured])]
    scores = MenuScores.of(plans, outcomes, len(measured))
    z, margin_z = run.config.confidence_z, run.config.anchor_margin_z
    folds = fold_of(len(measured), run.seed)
    every = np.arange(len(measured))
    on_val = np.arange(len(train), len(measured))
    decisions = []
    for target, budget in enumerate(run.targets):
        systems, answered = policy_outcomes(run.controller, run.experiment, val, budget, run.deltas[target])
        policy = scores_of(answered)
        on_validation = summarise(systems, answered, z)
        policy_perf, policy_fits = on_validation.perf, on_validation.meets(budget)
        best = scores.best_fitting(budget, every, z)
        picks = held_out_picks(scores, budget, folds, z) if best is not None else None
        if best is None or picks is None:
            decisions.append(GuardDecision(budget, None, None, policy_perf, None, 0.0, 0.0))
            continue
        menu = scores.score[picks[on_val], on_val]
        wins, difference, margin = policy_wins(policy, menu, margin_z)
        menu_perf = float(graded_means(menu[None, :])[0])
        kept = None if wins and policy_fits else plans[best]
        decisions.append(GuardDecision(budget, kept, plans[best], policy_perf, menu_perf, difference, margin))
    return decisions


def apply_guard(
    run: TrainingRun, result: TrainResult, splits: Splits, known: PlanMenu | None = None
) -> list[GuardDecision]:
    """Decide what serves each target budget (`guard`) and make `result` report it: the plans it keeps, their
    validation and test numbers in place of the policy's where a plan serves (the test split only measured)."""
    decisions = guard(run, splits.train, splits.val, known)
    result.guard = [decision.to_json() for decision in decisions]
    result.plans = [decision.plan.to_json() if decision.plan is not None else None for decision in decisions]
    z = run.config.confidence_z
    for target, decision in enumerate(decisions):
        if decision.plan is None:
            continue
        on_val, on_test = (
            measure(run.experiment, [decision.plan] * len(split), split, z) for split in (splits.val, splits.test)
        )
        if target < len(result.points):
            result.points[target] |= {"feasible": True, "val": asdict(on_val), "test": asdict(on_test), "plan": True}
            result.points[target].pop("judged", None)
        if target == len(decisions) - 1:  # the user's budget
            result.feasible, result.val, result.test, result.judged = True, on_val, on_test, None
    return decisions
