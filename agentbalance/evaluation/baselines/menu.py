"""The plans a practitioner picks on validation: `single-val` (a backbone alone) and `plan-menu` (a backbone
alone, an agreement cascade or a self-consistency vote).

What a user without agentbalance does with recorded answers: score every plan of a menu on the validation split
and, at each budget level, take the best one that fits there. The same plan then serves every query (what runs
of it still depends on the answers: a cascade escalates only on disagreement). Nothing reads the test split; the
frontier of the chosen plans is scored there like every method's. Unlike the `single` frontier, which takes every
backbone as measured on test (the paper's convention, an optimistic choice), these are the honest yardsticks.

The menu of `plan-menu`: every backbone of the catalog alone; every agreement cascade (two answerers, one backbone
twice meaning two of its samples, and the decision role on any other backbone, asked only when they disagree,
the style of FrugalGPT and the mixture-of-thoughts cascade); and every backbone's majority vote of 3 and 5
samples. The budget levels, per cost axis, are `points` budgets log-spaced from the cheapest plan's validation
cost to the base MAS's (where the metrics' budget axis ends); a plan fits a level when its mean validation cost
is at most the level, the rule a user applies, and among those fitting the best validation Perf wins (the
cheaper on a tie). A plan chosen at several levels is one setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.evaluation.baselines.fixed import base_mas, same_mas_for_every_query
from agentbalance.evaluation.curve_files import AXES
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.measuring import CONFIDENCE_Z, Evaluation, measure, summarise
from agentbalance.templates import VOTE_SAMPLES, cascade_backbones, cascade_mas, single_mas, vote_mas


@dataclass(frozen=True)
class Plan:
    """One plan of a menu and what it measured on the validation split."""

    name: str  # a backbone; "a+b->c" (a cascade); "a x3" (a vote)
    mas: MAS
    validation: Evaluation


def cascade_name(answerers: tuple[str, str], escalation: str) -> str:
    return f"{answerers[0]}+{answerers[1]}->{escalation}"


def single_plans(experiment: Experiment) -> list[tuple[str, MAS]]:
    """Every backbone of the world's catalog alone (kept by the Pareto filter or not), as `single` sweeps them."""
    return [(name, single_mas(experiment.roles, name)) for name in experiment.world.catalog.names]


def menu_plans(experiment: Experiment) -> list[tuple[str, MAS]]:
    """The backbones alone, every agreement cascade and every vote of `VOTE_SAMPLES` samples of a backbone."""
    names, roles = list(experiment.world.catalog.names), experiment.roles
    cascades = [
        (cascade_name(answerers, escalation), cascade_mas(roles, answerers, escalation))
        for answerers, escalation in cascade_backbones(names)
    ]
    votes = [(f"{name} x{k}", vote_mas(roles, name, k)) for name in names for k in VOTE_SAMPLES]
    return [*single_plans(experiment), *cascades, *votes]


def measure_plans(experiment: Experiment, plans: Sequence[tuple[str, MAS]]) -> dict[str, Plan]:
    """Each plan run on every validation question (one batch: the world sees every call at once)."""
    val = experiment.splits.val
    outcomes = experiment.execute([(mas, query) for _, mas in plans for query in val])
    n = len(val)
    return {
        name: Plan(name, mas, summarise([mas] * n, outcomes[i * n : (i + 1) * n], CONFIDENCE_Z))
        for i, (name, mas) in enumerate(plans)
    }


def budget_levels(plans: Sequence[Plan], ceiling: float, axis: str, points: int) -> np.ndarray:
    """`points` budgets on `axis`, log-spaced from the cheapest plan's positive validation cost to `ceiling` (the
    base MAS's), both ends included; one level, or no spread, is the ceiling."""
    costs = np.array([getattr(plan.validation, axis) for plan in plans], dtype=float)
    positive = costs[costs > 0]
    low = min(float(positive.min()), ceiling) if positive.size else ceiling
    if points == 1 or low >= ceiling:
        return np.full(points, ceiling)
    return np.geomspace(low, ceiling, points)


def best_fitting(plans: Sequence[Plan], axis: str, level: float) -> Plan | None:
    """The plan of the best validation Perf whose mean validation cost on `axis` is at most `level` (the cheaper
    on a tie, then the first); None when none fits."""
    fitting = [plan for plan in plans if getattr(plan.validation, axis) <= level * (1 + 1e-12)]
    if not fitting:
        return None
    return max(fitting, key=lambda plan: (plan.validation.perf, -getattr(plan.validation, axis)))


class ValidatedPlans:
    """Settings: the plans chosen at each budget level of each cost axis (see the module docstring)."""

    name = "plan-menu"
    single_only = False

    def __init__(self) -> None:
        self._measured: tuple[Experiment, dict[str, Plan], dict[str, float]] | None = None

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        plans, ceilings = self.measured(experiment)
        chosen: dict[str, None] = {}
        for axis in AXES:
            for level in budget_levels(list(plans.values()), ceilings[axis], axis, points):
                best = best_fitting(list(plans.values()), axis, float(level))
                if best is not None:
                    chosen.setdefault(best.name)
        return list(chosen)

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        plans, _ = self.measured(experiment)
        if setting not in plans:
            example = next(iter(plans))
            raise AgentBalanceError(f"{self.name}: {setting!r} is not a plan of this menu (e.g. {example!r})")
        return same_mas_for_every_query(plans[setting].mas)

    def measured(self, experiment: Experiment) -> tuple[dict[str, Plan], dict[str, float]]:
        """Every plan with its validation results, and the base MAS's validation cost per axis (the levels'
        ceiling), measured once per experiment (a sweep asks for its settings, then fits each)."""
        if self._measured is None or self._measured[0] is not experiment:
            listed = single_plans(experiment) if self.single_only else menu_plans(experiment)
            val = experiment.splits.val
            base = measure(experiment, [base_mas(experiment)] * len(val), val)
            ceilings = {axis: float(getattr(base, axis)) for axis in AXES}
            self._measured = (experiment, measure_plans(experiment, listed), ceilings)
        return self._measured[1], self._measured[2]


class SingleOnValidation(ValidatedPlans):
    """`plan-menu` with a menu of the backbones alone: what a user does without agentbalance."""

    name = "single-val"
    single_only = True
