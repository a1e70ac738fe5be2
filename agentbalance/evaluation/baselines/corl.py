"""CoRL-style baseline (our re-implementation of the idea of Jin et al., 2025, "Controlling Performance and Budget
of a Centralized Multi-agent LLM System with Reinforcement Learning", not their code): one centralized controller,
conditioned on the budget, routes each query to experts of the pool; trained once for a range of budgets.

Every setting is served by the same trained model with its budget condition as input: fit never retrains for an
experiment it has seen. The controller decides from the query text and the backbones' features only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines._routing import (
    HIDDEN,
    VECTOR_DIM,
    BackboneScorer,
    Decisions,
    RoutingPolicy,
    Step,
    choose,
    choose_flags,
    expert_role,
)
from agentbalance.evaluation.baselines.base import (
    Constructor,
    Penalty,
    PenaltySweptMethod,
    PolicyGradientConfig,
    kappa_of,
    penalty_grid,
    penalty_of,
    train_sampled_policy,
)
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerContext
from agentbalance.policy.sampling import seeded
from agentbalance.query import Query

# Training draws the budget condition of each batch from this many points of the shared kappa grid (0 and a
# geometric range up to the grid's maximum), as CoRL trains one controller over several budget modes.
CONDITION_POINTS = 9
KAPPA_FLOOR = 0.01  # log(kappa + floor): kappa = 0 (cost ignored) is a finite condition below the grid
# One model serves every setting, so it gets twice one per-setting training budget (still far less than one
# training per setting), at a tenth of the shared learning rate: at 1e-2 the controller settles on one
# compromise backbone for every condition within a few dozen steps, before the condition's effect is learned
# (measured on the simulated world); at 1e-3 the cheap and the strong ends of the grid separate.
DEFAULT_CONFIG = PolicyGradientConfig(epochs=2 * PolicyGradientConfig().epochs, learning_rate=1e-3)


def budget_condition(kappa: float) -> float:
    """The controller's budget input: log kappa, centred and scaled to about [-1.5, 1.2] over the grid."""
    return (math.log(kappa + KAPPA_FLOOR) - math.log(0.2)) / 2


class CoRLPolicy(RoutingPolicy):
    """p(lead | q, c) prod_{m != lead} p(consult m | q, c, lead), c the budget condition.

    The lead backbone is the controller's answering model (the decision agent, the MAS answer). Consulted
    experts answer in the library's expert role first and the lead answers from their answers; consulting
    nobody means the lead answers alone, so a query routed to one expert is answered by that expert alone.
    """

    def __init__(self, context: ControllerContext, seed: int, expert: str) -> None:
        super().__init__(context, seed)
        self.expert = expert
        self.condition = budget_condition(0.0)  # set per batch in training, per setting at inference
        self.state = nn.Sequential(nn.Linear(self.embed_dim + 1, HIDDEN), nn.GELU())
        self.lead = BackboneScorer(HIDDEN + 1, self.embed_dim)
        self.consult = BackboneScorer(HIDDEN + 1 + VECTOR_DIM, self.embed_dim)
        self.consult_bias = nn.Parameter(torch.tensor(-1.0))  # start lean: about one expert in four consulted

    @contextmanager
    def conditioned(self, condition: float) -> Iterator[None]:
        """Decide under budget condition `condition` for the duration of a block."""
        before, self.condition = self.condition, condition
        try:
            yield
        finally:
            self.condition = before

    def decide(self, embeddings: torch.Tensor, mode: str, given: Decisions | None = None) -> Step:
        ctx, batch, g = self.context, embeddings.shape[0], given or {}
        condition = torch.full((batch, 1), self.condition)
        features = torch.cat([self.state(torch.cat([embeddings, condition], dim=1)), condition], dim=1)
        lead = choose(self.lead(features, self.lead.vectors(ctx)), mode, self.generator, g.get("lead"))
        vectors = self.consult.vectors(ctx)
        logits = self.consult(torch.cat([features, vectors[lead.index]], dim=1), vectors) + self.consult_bias
        others = ~nn.functional.one_hot(lead.index, ctx.backbone_count).bool()
        experts = choose_flags(logits, mode, self.generator, g.get("experts"), active=others)
        return Step(
            {"lead": lead.index, "experts": experts.index},
            lead.log_prob + experts.log_prob,
            lead.entropy + experts.entropy,
        )

    def systems(self, decisions: Decisions) -> list[MAS]:
        names = self.context.backbone_names
        return [
            self.panel_mas([names[m] for m, flag in enumerate(flags) if flag], names[lead], self.expert)
            for lead, flags in zip(decisions["lead"].tolist(), decisions["experts"].tolist(), strict=True)
        ]


class CoRLStyle(PenaltySweptMethod):
    """One budget-conditioned controller per experiment, trained on the first fit and reused by every setting;
    the settings are the shared cost-penalty grid ("kappa=K"), each fed to the model as its condition."""

    name = "corl-style"

    def __init__(self, config: PolicyGradientConfig | None = None) -> None:
        self.config = config or DEFAULT_CONFIG
        self.trainings = 0  # how many controllers were trained (one per experiment)
        self._trained: tuple[Experiment, CoRLPolicy] | None = None  # the experiment last trained for, its model

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        kappa = kappa_of(setting)
        highest = max(kappa_of(s) for s in penalty_grid(experiment, CONDITION_POINTS))
        if kappa > highest:
            raise AgentBalanceError(
                f"{self.name}: setting {setting!r} lies outside the budget range the controller is trained on "
                f"(kappa from 0 to {highest:g})"
            )
        policy = self._controller(experiment)
        condition = budget_condition(kappa)

        def construct(queries: Sequence[Query]) -> list[MAS]:
            with policy.conditioned(condition):
                return policy.greedy(experiment.embed(queries))

        return construct

    def _controller(self, experiment: Experiment) -> CoRLPolicy:
        """The experiment's trained controller, trained now if this is its first setting."""
        if self._trained is not None and self._trained[0] is experiment:  # a sweep asks every setting of one
            return self._trained[1]
        with seeded(experiment.seed):
            policy = CoRLPolicy(experiment.context, experiment.seed, expert_role(experiment.roles))
        grid = [kappa_of(s) for s in penalty_grid(experiment, CONDITION_POINTS)]

        def draw_budget(generator: np.random.Generator) -> Penalty:
            kappa = grid[int(generator.integers(len(grid)))]
            policy.condition = budget_condition(kappa)
            return penalty_of(experiment, f"kappa={kappa}")

        train_sampled_policy(policy, experiment, draw_budget, self.config)
        self.trainings += 1
        self._trained = (experiment, policy)
        return policy
