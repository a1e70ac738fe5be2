"""Measuring what a policy built on a split: Perf (the mean quality score over the graded queries), mean Tok and Lat
with their upper bounds.

The one measuring module training, `TrainedController` and the sweeps share; it imports no sweep, no trainer
and no `trained`, so every layer above can use it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.policy.budget_input import budget_condition
from agentbalance.policy.controller import Controller
from agentbalance.query import Query
from agentbalance.runtime.rollout import Outcome

CONFIDENCE_Z = 1.64  # the safety margin of every upper bound: one-sided 95% bound of a mean


@dataclass(frozen=True)
class Evaluation:
    """Greedy construction + execution on a split: the means and upper bounds, and what was built.

    `perf` is the mean quality score (in [0, 1]; 1/0 for right/wrong tasks: the accuracy) over the `n_graded`
    queries whose answer could be graded; `n` counts every query (cost and latency are means over all of them:
    an ungraded query still costs). `perf_sd` is the sample standard deviation of those scores when some score
    is neither 0 nor 1, else None. `escalation_rate` is the share of queries on which a conditional agent ran
    (its inputs disagreed): their cost is random, and the upper bounds are over the realised costs, escalations
    included."""

    perf: float
    tok: float  # USD per 100 queries
    lat: float  # seconds per query
    tok_upper: float
    lat_upper: float
    n: int
    pools: dict[str, int] = field(default_factory=dict)
    agent_counts: dict[str, int] = field(default_factory=dict)
    depths: dict[str, int] = field(default_factory=dict)
    backbones: dict[str, int] = field(default_factory=dict)
    n_graded: int | None = None  # None (older run folders): every query was graded
    escalation_rate: float = 0.0
    perf_sd: float | None = None  # None: right/wrong grades (and older run folders)

    def __post_init__(self) -> None:
        if self.n_graded is None:
            object.__setattr__(self, "n_graded", self.n)

    def meets(self, budget: Budget, upper: bool = True) -> bool:
        tok, lat = (self.tok_upper, self.lat_upper) if upper else (self.tok, self.lat)
        return (budget.tok is None or tok <= budget.tok) and (budget.lat is None or lat <= budget.lat)

    def perf_standard_error(self) -> float:
        """The standard error of Perf over its n_graded scores: for right/wrong grades the Bernoulli one,
        sqrt(p (1 - p) / n); for other scores the sample standard deviation over sqrt(n) (the Bernoulli formula
        would overstate it: p (1 - p) bounds the variance of any score in [0, 1])."""
        n = max(self.n_graded or 0, 1)
        if self.perf_sd is None:
            return math.sqrt(self.perf * (1 - self.perf) / n)
        return self.perf_sd / math.sqrt(n)

    def excess(self, budget: Budget) -> float:
        """How far above the budget the upper bounds are (0 when within), relative to the budget."""
        over = [0.0]
        if budget.tok is not None:
            over.append(self.tok_upper / budget.tok - 1)
        if budget.lat is not None:
            over.append(self.lat_upper / budget.lat - 1)
        return max(over)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def scores_of(outcomes: Iterable[Outcome]) -> np.ndarray:
    """Each outcome's quality score, NaN where it could not be graded."""
    return np.array([np.nan if o.score is None else o.score for o in outcomes], dtype=np.float64)


def graded_perf(outcomes: Iterable[Outcome]) -> tuple[float, int, float | None]:
    """Perf as the mean score over graded outcomes (an ungraded answer is neither right nor wrong), their count,
    and their sample standard deviation when some score is neither 0 nor 1 (None: right/wrong grades)."""
    graded = np.array([o.score for o in outcomes if o.score is not None], dtype=np.float64)
    if not graded.size:
        return 0.0, 0, None
    right_or_wrong = bool(np.isin(graded, (0.0, 1.0)).all())
    spread = None if right_or_wrong else (float(graded.std(ddof=1)) if graded.size > 1 else 0.0)
    return float(graded.mean()), int(graded.size), spread


def upper_bounds(values: np.ndarray, z: float) -> np.ndarray:
    """The one-sided upper confidence bound of the mean along the last axis (of one sample, the value itself): the
    rule every budget is judged by."""
    n = values.shape[-1]
    mean = values.mean(axis=-1)
    return mean + z * values.std(axis=-1, ddof=1) / math.sqrt(n) if n > 1 else mean


def summarise(systems: Sequence[MAS], outcomes: Sequence[Outcome], z: float) -> Evaluation:
    """Means, one-sided upper bounds and the distribution of what was built."""
    n = len(outcomes)
    tok = np.array([100 * o.cost_usd for o in outcomes])
    lat = np.array([o.latency_s for o in outcomes])

    def upper(values: np.ndarray) -> float:
        return float(upper_bounds(values, z))

    perf, n_graded, perf_sd = graded_perf(outcomes)
    backbones: Counter[str] = Counter(agent.backbone for mas in systems for agent in mas.agents)
    return Evaluation(
        perf=perf,
        tok=float(tok.mean()),
        lat=float(lat.mean()),
        tok_upper=upper(tok),
        lat_upper=upper(lat),
        n=n,
        pools=_counts(str(mas.pool) for mas in systems),
        agent_counts=_counts(str(len(mas)) for mas in systems),
        depths=_counts(str(mas.depth()) for mas in systems),
        backbones=dict(backbones.most_common()),
        n_graded=n_graded,
        escalation_rate=float(np.mean([o.escalated for o in outcomes])) if n else 0.0,
        perf_sd=perf_sd,
    )


def _counts(values: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))


def measure(
    experiment: Experiment, systems: Sequence[MAS], queries: Sequence[Query], z: float = CONFIDENCE_Z
) -> Evaluation:
    """Run one MAS per query in the experiment's world and summarise Perf / Tok / Lat with their upper bounds."""
    outcomes = experiment.execute(list(zip(systems, queries, strict=True)))
    return summarise(systems, outcomes, z)


def policy_outcomes(
    controller: Controller,
    experiment: Experiment,
    queries: Sequence[Query],
    budget: Budget,
    delta: float | None = None,
) -> tuple[list[MAS], list[Outcome]]:
    """Greedy construction for each query (under `budget` as condition, at `delta` or the configured offset)
    and its outcome in the experiment's world, query by query (paired comparisons need them, not only the means)."""
    condition = budget_condition(budget, len(queries))
    systems = controller.construct(experiment.embed(queries), condition, [q.id for q in queries], delta=delta)
    return systems, experiment.execute(list(zip(systems, queries, strict=True)))


def evaluate_policy(
    controller: Controller,
    experiment: Experiment,
    queries: Sequence[Query],
    budget: Budget,
    delta: float | None = None,
    z: float = CONFIDENCE_Z,
) -> Evaluation:
    """`policy_outcomes` summarised: the controller's greedy Perf / Tok / Lat on a split under one budget."""
    return summarise(*policy_outcomes(controller, experiment, queries, budget, delta), z)


def cheapest_mas(experiment: Experiment, axis: str = "tok", priced: bool = False) -> MAS:
    """The cheapest point the experiment reaches on one cost axis: the decision agent alone on the kept
    backbone of the lowest TokCost (axis "tok") or the lowest latency ("lat"). With `priced`, the cheapest of
    those whose cost is above zero, if any: a free backbone fits every budget, so a range of budgets starts
    where spending does."""
    context = experiment.context
    costs = {"tok": context.backbone_tok_cost, "lat": context.backbone_latency_s}
    if axis not in costs:
        raise AgentBalanceError(f"unknown cost axis {axis!r}; known: tok, lat")
    cost = costs[axis]
    if priced and bool((cost > 0).any()):
        cost = torch.where(cost > 0, cost, torch.inf)
    cheapest = context.backbone_names[int(torch.argmin(cost))]
    return MAS.single(experiment.roles.decision.name, cheapest)
