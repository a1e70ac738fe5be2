"""agentbalance itself as a compared method: one budget-conditioned controller, swept at inference.

The budget range is measured on the validation split (never test): from the cheapest point the catalog
reaches (its cheapest kept backbone alone) up to the base MAS's cost, which is where the metrics' budget
axis ends. The controller trains once for that range, its grid budgets being the sweep's settings, and
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
from agentbalance.evaluation.measure import cheapest_mas, measure
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerContext
from agentbalance.policy.controller import ABLATIONS, ControllerConfig
from agentbalance.pooling import random_pools
from agentbalance.query import Query
from agentbalance.train.build import BuildSpec, train_on
from agentbalance.train.config import TrainConfig
from agentbalance.trained import TrainedController

MIN_RATIO = 16.0  # the range always reaches below the metrics' lowest budget point T1 = B_max / 8


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
        # the experiment last seen, its budget range and the controller trained once for it (a sweep asks
        # for every setting on the same experiment; another experiment starts afresh)
        self._experiment: Experiment | None = None
        self._points = 0  # the sweep's settings of that experiment: the training grid
        self._range: BudgetRange | None = None
        self._trained: TrainedController | None = None

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        self._focus(experiment)
        if points != self._points:
            self._points, self._range, self._trained = points, None, None
        budget_range = self._budget_range(experiment)
        # the settings are the training grid (its scales, printed as settings): a setting between two grid
        # budgets would be served by an interpolated condition, a hybrid of two budgets' MASes that neither
        # budget chose on validation
        return [f"scale={s:.4g}" for s in budget_range.scales()[:points]]

    def _budget_range(self, experiment: Experiment) -> BudgetRange:
        """From the cheapest kept backbone alone to the base MAS, on validation, each axis over its own
        span (Tok often spans 100x more than Lat): the low end of the range is that backbone alone. Its
        grid has one budget per setting of the sweep (at least two: a range needs both ends)."""
        self._focus(experiment)
        if self._range is None:
            val = experiment.splits.val
            base = measure(experiment, [base_mas(experiment)] * len(val), val)
            alone = measure(experiment, [cheapest_mas(experiment)] * len(val), val)
            tok_ratio, lat_ratio = (max(base.tok / alone.tok, 2.0), max(base.lat / alone.lat, 2.0))
            ratio = max(MIN_RATIO, tok_ratio, lat_ratio)
            exponents = (math.log(tok_ratio) / math.log(ratio), math.log(lat_ratio) / math.log(ratio))
            steps = max(2, self._points)
            self._range = BudgetRange(Budget(base.tok, base.lat), ratio, steps, exponents=exponents)
        return self._range

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        try:
            scale = float(setting.removeprefix("scale="))
        except ValueError:
            raise AgentBalanceError(f"not an agentbalance setting: {setting!r} (expected scale=NUMBER)") from None
        controller = self._controller(experiment)
        assert controller.budget_range is not None
        budget_range = controller.budget_range
        budget = budget_range.at(min(1.0, max(scale, 1 / budget_range.ratio)))  # a setting rounded just below

        def construct(queries: Sequence[Query]) -> list[MAS]:
            return controller.construct_embedded(experiment.embed(queries), [q.id for q in queries], budget)

        return construct

    def _focus(self, experiment: Experiment) -> None:
        if experiment is not self._experiment:
            self._experiment, self._range, self._trained = experiment, None, None

    def _controller(self, experiment: Experiment) -> TrainedController:
        budget_range = self._budget_range(experiment)
        if self._trained is None:
            trained_on = _with_random_pools(experiment) if self.ablation == "random-pools" else experiment
            spec = BuildSpec(
                budget=budget_range.loosest,
                budget_range=budget_range,
                train=self.train,
                controller=ControllerConfig(ablation=self.ablation if self.ablation != "random-pools" else None),
                restarts=self.restarts,
            )
            controller, _, result = train_on(trained_on, spec)
            assert result.budget_range is not None
            self._trained = TrainedController(
                controller, experiment.roles, result.budget_range.loosest, result.budget_range, experiment.encoder
            )
        return self._trained


def _with_random_pools(experiment: Experiment) -> Experiment:
    """The same experiment with the kept backbones dealt into random pools (same sizes, same tiers order)."""
    pools = random_pools(experiment.pools, experiment.seed)
    context = ControllerContext.build(experiment.catalogs.described, pools, experiment.roles, experiment.encoder)
    return dataclasses.replace(experiment, pools=pools, context=context)
