"""agentbalance itself as a compared method: one budget-conditioned controller, swept at inference.

The budget range is measured on the validation split (never test): from the cheapest point the catalog
reaches (its cheapest kept backbone alone) up to the base MAS's cost, which is where the metrics' budget
axis ends. The controller trains once for that range and each setting of the sweep is a budget scale
served without retraining.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerContext
from agentbalance.policy.controller import ABLATIONS, Controller, ControllerConfig
from agentbalance.pooling import random_pools
from agentbalance.query import Query
from agentbalance.train.budgets import Budget, BudgetRange, budget_condition
from agentbalance.train.build import BuildSpec, train_on

GRID_STEPS = 6  # training budgets, log-spaced over the range; the sweep between them interpolates
MIN_RATIO = 16.0  # the range always reaches below the metrics' lowest budget point T1 = B_max / 8


class AgentBalanceMethod:
    name = "agentbalance"

    def __init__(self, restarts: int = 1, ablation: str | None = None) -> None:
        self.restarts = restarts
        self.ablation = ablation  # one of policy.controller.ABLATIONS: the paper's Table 3 variants
        if ablation is not None:
            if ablation not in ABLATIONS:
                raise AgentBalanceError(f"unknown ablation {ablation!r}; known: {', '.join(ABLATIONS)}")
            self.name = f"agentbalance-{ablation}"
        self._trained: dict[int, tuple[Controller, BudgetRange]] = {}  # id(experiment) -> trained once
        self._ranges: dict[int, BudgetRange] = {}  # id(experiment) -> the range measured on validation

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        ratio = self._range(experiment).ratio
        return [f"scale={s:.4g}" for s in np.geomspace(1 / ratio, 1.0, points)]

    def _range(self, experiment: Experiment) -> BudgetRange:
        """From the cheapest kept backbone alone to the base MAS, on validation, each axis over its own
        span (Tok often spans 100x more than Lat): the low end of the range is that backbone alone."""
        key = id(experiment)
        if key not in self._ranges:
            val = experiment.splits.val
            base = experiment.measure([base_mas(experiment)] * len(val), val)
            context = experiment.context
            cheapest = context.backbone_names[int(context.backbone_tok_cost.argmin())]
            alone = experiment.measure([MAS.single(experiment.roles.decision.name, cheapest)] * len(val), val)
            tok_ratio, lat_ratio = (max(base.tok / alone.tok, 2.0), max(base.lat / alone.lat, 2.0))
            ratio = max(MIN_RATIO, tok_ratio, lat_ratio)
            exponents = (math.log(tok_ratio) / math.log(ratio), math.log(lat_ratio) / math.log(ratio))
            self._ranges[key] = BudgetRange(Budget(base.tok, base.lat), ratio, GRID_STEPS, exponents=exponents)
        return self._ranges[key]

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        try:
            scale = float(setting.removeprefix("scale="))
        except ValueError:
            raise AgentBalanceError(f"not an agentbalance setting: {setting!r} (expected scale=NUMBER)") from None
        controller, budget_range = self._controller(experiment)
        scale = min(1.0, max(scale, 1 / budget_range.ratio))  # a setting rounded just below the range
        served, delta = budget_range.serve(budget_range.at(scale))

        def construct(queries: Sequence[Query]) -> list[MAS]:
            condition = budget_condition(served, len(queries))
            return controller.construct(experiment.embed(queries), condition, [q.id for q in queries], delta=delta)

        return construct

    def _controller(self, experiment: Experiment) -> tuple[Controller, BudgetRange]:
        key = id(experiment)
        if key not in self._trained:
            budget_range = self._range(experiment)
            if self.ablation == "random-pools":
                experiment = _with_random_pools(experiment)
            spec = BuildSpec(
                budget=budget_range.loosest,
                budget_range=budget_range,
                train=experiment.train_config,
                controller=ControllerConfig(ablation=self.ablation if self.ablation != "random-pools" else None),
                restarts=self.restarts,
            )
            controller, _, result = train_on(experiment, spec)
            assert result.budget_range is not None
            self._trained[key] = (controller, result.budget_range)
        return self._trained[key]


def _with_random_pools(experiment: Experiment) -> Experiment:
    """The same experiment with the kept backbones dealt into random pools (same sizes, same tiers order)."""
    pools = random_pools(experiment.pools, experiment.seed)
    context = ControllerContext.build(experiment.catalogs.described, pools, experiment.roles, experiment.encoder)
    return dataclasses.replace(experiment, pools=pools, context=context)
