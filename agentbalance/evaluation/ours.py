"""agentbalance itself as a compared method: one budget-conditioned controller, swept at inference.

The budget range is anchored on the base MAS's cost measured on the validation split (never test):
the controller trains once for budgets from that cost / RATIO up to it, and each setting of the sweep
is a budget scale served without retraining.
"""

from __future__ import annotations

import dataclasses
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

RATIO = 16.0  # budgets from 1/16 of the base MAS's cost: below the metrics' lowest point T1 = B_max / 8
GRID_STEPS = 5  # 1/16, 1/8, 1/4, 1/2, 1: the metrics' budget points are grid points


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

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        return [f"scale={s:.4g}" for s in np.geomspace(1 / RATIO, 1.0, points)]

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        try:
            scale = float(setting.removeprefix("scale="))
        except ValueError:
            raise AgentBalanceError(f"not an agentbalance setting: {setting!r} (expected scale=NUMBER)") from None
        controller, budget_range = self._controller(experiment)
        served, delta = budget_range.serve(budget_range.loosest.scaled(scale))

        def construct(queries: Sequence[Query]) -> list[MAS]:
            condition = budget_condition(served, len(queries))
            return controller.construct(experiment.embed(queries), condition, [q.id for q in queries], delta=delta)

        return construct

    def _controller(self, experiment: Experiment) -> tuple[Controller, BudgetRange]:
        key = id(experiment)
        if key not in self._trained:
            if self.ablation == "random-pools":
                experiment = _with_random_pools(experiment)
            val = experiment.splits.val
            base = experiment.measure([base_mas(experiment)] * len(val), val)
            loosest = Budget(base.tok, base.lat)
            spec = BuildSpec(
                budget=loosest,
                budget_range=BudgetRange(loosest, RATIO, GRID_STEPS),
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
    context = ControllerContext.build(experiment.world.catalog, pools, experiment.roles, experiment.encoder)
    return dataclasses.replace(experiment, pools=pools, context=context)
