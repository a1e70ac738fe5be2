"""agentbalance itself as a compared method: a budget-conditioned controller per cost axis, swept at inference.

A user with a Tok budget runs `build --budget-tok X` (Lat free), so the Tok curve is served by a controller
trained for Tok budgets alone and the Lat curve by one trained for Lat budgets alone: budgets on both axes
at once would let the tighter axis decide (at the low end of a joint range only the fastest backbone fits
the Lat budget, whatever its accuracy). Each range is measured on the validation split (never test): from
the cheapest point of its axis (the cheapest, or the fastest, kept backbone alone) up to the base MAS's
cost on it, where the metrics' budget axis ends. Each controller trains once for its range, its grid
budgets being the sweep's settings ("tok:scale=S", "lat:scale=S", points of that axis's curve only), and
each setting is served without retraining.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.curve_files import AXES
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.measuring import cheapest_mas, measure
from agentbalance.policy.context import LATENCY_FLOOR_S, TOK_COST_FLOOR, ControllerContext
from agentbalance.policy.controller import ABLATIONS, ControllerConfig
from agentbalance.pooling import random_pools
from agentbalance.query import Query
from agentbalance.train.build import BuildSpec, train_on
from agentbalance.train.config import TrainConfig
from agentbalance.trained import TrainedController

MIN_RATIO = 2.0  # a range needs two distinct ends, even where the base MAS costs about its cheapest backbone


class AgentBalanceMethod:
    name = "agentbalance"

    def __init__(self, restarts: int = 1, ablation: str | None = None, train: TrainConfig | None = None) -> None:
        self.restarts = restarts
        self.train = train or TrainConfig()
        self.ablation = ablation  # one of policy.controller.ABLATIONS: the paper's Table 3 variants
        if ablation is not None:
            if ablation not in ABLATIONS:
                raise AgentBalanceError(f"unknown ablation {ablation!r}; known: {', '.join(ABLATIONS)}")
            self.name = f"agentbalance-{ablation}"
        # the experiment last seen, and per axis its budget range and the controller trained once for it (a
        # sweep asks for every setting on the same experiment; another experiment starts afresh)
        self._experiment: Experiment | None = None
        self._points = 0  # the sweep's settings per axis of that experiment: each training grid
        self._ranges: dict[str, BudgetRange] = {}
        self._trained: dict[str, TrainedController] = {}

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        self._focus(experiment)
        if points != self._points:
            self._points, self._ranges, self._trained = points, {}, {}
        # the settings are each training grid (its scales, printed as settings): a setting between two grid
        # budgets would be served by an interpolated condition, a hybrid of two budgets' MASes that neither
        # budget chose on validation
        return [
            f"{axis}:scale={scale:.4g}"
            for axis in AXES
            for scale in self.budget_range(experiment, axis).scales()[:points]
        ]

    def budget_range(self, experiment: Experiment, axis: str) -> BudgetRange:
        """On one axis, from its cheapest kept backbone alone to the base MAS, on validation (the other axis
        free). Its grid has one budget per setting of the sweep (at least two: a range needs both ends)."""
        self._focus(experiment)
        if axis not in self._ranges:
            val = experiment.splits.val
            base = measure(experiment, [base_mas(experiment)] * len(val), val)
            alone = measure(experiment, [cheapest_mas(experiment, axis, priced=True)] * len(val), val)
            floor = TOK_COST_FLOOR if axis == "tok" else LATENCY_FLOOR_S  # every backbone free: a range all the same
            loosest_cost = max(getattr(base, axis), floor)
            ratio = max(MIN_RATIO, loosest_cost / max(getattr(alone, axis), floor))
            loosest = Budget(tok=loosest_cost) if axis == "tok" else Budget(lat=loosest_cost)
            self._ranges[axis] = BudgetRange(loosest, ratio, max(2, self._points))
        return self._ranges[axis]

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        axis, _, scale_text = setting.partition(":scale=")
        try:
            scale = float(scale_text)
        except ValueError:
            scale = math.nan
        if axis not in AXES or not math.isfinite(scale):
            raise AgentBalanceError(
                f"not an agentbalance setting: {setting!r} (expected tok:scale=NUMBER or lat:scale=NUMBER)"
            )
        controller = self._controller(experiment, axis)
        assert controller.budget_range is not None
        budget_range = controller.budget_range
        budget = budget_range.at(min(1.0, max(scale, 1 / budget_range.ratio)))  # a setting rounded just below

        def construct(queries: Sequence[Query]) -> list[MAS]:
            return controller.construct_embedded(experiment.embed(queries), [q.id for q in queries], budget)

        return construct

    def _focus(self, experiment: Experiment) -> None:
        if experiment is not self._experiment:
            self._experiment, self._ranges, self._trained = experiment, {}, {}

    def _controller(self, experiment: Experiment, axis: str) -> TrainedController:
        budget_range = self.budget_range(experiment, axis)
        if axis not in self._trained:
            trained_on = _with_random_pools(experiment) if self.ablation == "random-pools" else experiment
            spec = BuildSpec(
                budget=budget_range.loosest,
                budget_range=budget_range,
                # an ablation measures the policy's parts: no plan of the menu stands in for it
                train=self.train if self.ablation is None else dataclasses.replace(self.train, menu_guard=False),
                controller=ControllerConfig(ablation=self.ablation if self.ablation != "random-pools" else None),
                restarts=self.restarts,
            )
            controller, _, result = train_on(trained_on, spec)
            assert result.budget_range is not None
            plans = [MAS.from_json(plan) if plan else None for plan in result.plans]
            self._trained[axis] = TrainedController(
                controller,
                experiment.roles,
                result.budget_range.loosest,
                result.budget_range,
                experiment.encoder,
                plans=plans,
            )
        return self._trained[axis]


def _with_random_pools(experiment: Experiment) -> Experiment:
    """The same experiment with the kept backbones dealt into random pools (same sizes, same tiers order)."""
    pools = random_pools(experiment.pools, experiment.seed)
    context = ControllerContext.build(experiment.catalogs.described, pools, experiment.roles, experiment.encoder)
    return dataclasses.replace(experiment, pools=pools, context=context)
