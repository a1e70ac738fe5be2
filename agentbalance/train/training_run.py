"""`TrainingRun`: the state every part of one training run shares (experiment, controller, targets, deltas, seed).

It must never train or choose anything itself: the parts (difficulty labels, anchor, REINFORCE, budget
targeting) receive it and act on it; it only embeds, executes and measures for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.measuring import Evaluation, evaluate_policy
from agentbalance.policy.controller import Controller
from agentbalance.query import Query
from agentbalance.runtime.rollout import Outcome
from agentbalance.train.config import TrainConfig


@dataclass
class TrainingRun:
    """One controller trained on one experiment for one budget or a budget range.

    With a range, every grid budget is a target with its own dual variables and its own calibrated delta;
    with one budget it is the only target. The user's (loosest) budget is always the last target."""

    experiment: Experiment
    controller: Controller
    targets: list[Budget]
    budget_range: BudgetRange | None
    config: TrainConfig
    seed: int  # of this run's own draws (batches, imitation rows)
    deltas: list[float]  # the difficulty offset of each target: as configured, then as calibrated

    @classmethod
    def of(
        cls,
        experiment: Experiment,
        controller: Controller,
        budget: Budget | BudgetRange,
        config: TrainConfig | None = None,
        seed: int = 0,
    ) -> TrainingRun:
        budget_range = budget if isinstance(budget, BudgetRange) else None
        targets = budget.budgets() if isinstance(budget, BudgetRange) else [budget]
        deltas = [controller.config.delta for _ in targets]
        return cls(experiment, controller, targets, budget_range, config or TrainConfig(), seed, deltas)

    def embed(self, queries: Sequence[Query]) -> torch.Tensor:
        return self.experiment.embed(queries)

    def execute(self, pairs: Sequence[tuple[MAS, Query]]) -> list[Outcome]:
        """Run (MAS, query) pairs in the experiment's world, graded by its task's scorer where it has one."""
        return self.experiment.execute(pairs)

    def evaluate(self, queries: Sequence[Query], target: int = -1, delta: float | None = None) -> Evaluation:
        """Greedy construction under a target budget's condition and delta (or the delta given)."""
        delta = self.deltas[target] if delta is None else delta
        return evaluate_policy(
            self.controller, self.experiment, queries, self.targets[target], delta, self.config.confidence_z
        )
