"""Shared ground of the LLM-routing baselines (MasRouter-, CoRL-, RL-Focal-style): choosing among the kept
backbones from their features, exact log-probabilities of categorical / Bernoulli / sequential choices, MAS assembly.

A backbone is only ever seen through its profile embeddings and numeric features, never its identity or index,
so every policy here serves an unseen catalog as it is; nothing here executes a MAS.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS, Agent
from agentbalance.policy import sampling
from agentbalance.policy.context import BACKBONE_NUMERIC_FEATURES, ControllerContext
from agentbalance.query import Query
from agentbalance.roles import RoleKind, RoleSet
from agentbalance.worlds.base import verdict

HIDDEN = 64
VECTOR_DIM = HIDDEN + BACKBONE_NUMERIC_FEATURES  # a backbone's vector from BackboneScorer.vectors
Decisions = dict[str, torch.Tensor]  # named decision tensors of a batch, batch first; -1 marks "not decided"


@dataclass(frozen=True)
class Choice:
    """One decision for a batch: the chosen index ([B] or [B, K], -1 where not decided), its exact
    log-probability [B] and the entropy of the distributions it was drawn from [B]."""

    index: torch.Tensor
    log_prob: torch.Tensor
    entropy: torch.Tensor


@dataclass(frozen=True)
class Step:
    """A policy's pass over a batch: every decision, and the sums of their log-probabilities and entropies."""

    decisions: Decisions
    log_prob: torch.Tensor
    entropy: torch.Tensor


def choose(
    logits: torch.Tensor,
    mode: str,
    generator: torch.Generator,
    given: torch.Tensor | None = None,
    active: torch.Tensor | None = None,
) -> Choice:
    """A categorical choice per row of `logits` [B, N] (-inf: not allowed). Rows where `active` [B] is False
    decide nothing: index -1, log-probability and entropy 0."""
    if active is None:
        active = torch.ones(logits.shape[0], dtype=torch.bool)
    logits = torch.where(active.unsqueeze(1), logits, torch.zeros_like(logits))  # an idle row stays finite
    log_probs = torch.log_softmax(logits, dim=1)
    index = sampling.categorical(log_probs, mode, generator, given.clamp_min(0) if given is not None else None)
    zero = torch.zeros(logits.shape[0])
    return Choice(
        torch.where(active, index, torch.full_like(index, -1)),
        torch.where(active, log_probs.gather(1, index.unsqueeze(1)).squeeze(1), zero),
        torch.where(active, sampling.categorical_entropy(log_probs), zero),
    )


def choose_flags(
    logits: torch.Tensor,
    mode: str,
    generator: torch.Generator,
    given: torch.Tensor | None = None,
    active: torch.Tensor | None = None,
) -> Choice:
    """Independent Bernoulli flags [B, N] with p = sigmoid(logits); entries where `active` [B, N] is False
    are not decided (flag False, no log-probability). The index is the flags as 0/1."""
    if active is None:
        active = torch.ones_like(logits, dtype=torch.bool)
    chosen = sampling.flags(logits, mode, generator, given) & active
    terms, entropies = sampling.bernoulli_log_prob(chosen, logits), sampling.bernoulli_entropy(logits)
    zero = torch.zeros_like(logits)
    return Choice(chosen.long(), torch.where(active, terms, zero).sum(1), torch.where(active, entropies, zero).sum(1))


def choose_sequence(
    step_logits: Callable[[torch.Tensor], torch.Tensor],
    counts: torch.Tensor,
    steps: int,
    items: int,
    mode: str,
    generator: torch.Generator,
    given: torch.Tensor | None = None,
) -> Choice:
    """`counts` [B] items chosen one after another without replacement, at most `steps`; step t's logits
    [B, items] come from `step_logits(picked [B, items] bool)`, so each pick can depend on the earlier ones
    (a cascade). The log-probability is the exact sum of the conditional terms."""
    batch = counts.shape[0]
    picked = torch.zeros(batch, items, dtype=torch.bool)
    indices, log_prob, entropy = [], torch.zeros(batch), torch.zeros(batch)
    for t in range(steps):
        logits = step_logits(picked).masked_fill(picked, float("-inf"))
        choice = choose(logits, mode, generator, given[:, t] if given is not None else None, active=t < counts)
        indices.append(choice.index)
        log_prob, entropy = log_prob + choice.log_prob, entropy + choice.entropy
        picked = picked | (
            nn.functional.one_hot(choice.index.clamp_min(0), items).bool() & (choice.index >= 0)[:, None]
        )
    index = torch.stack(indices, dim=1) if indices else torch.zeros(batch, 0).long()
    return Choice(index, log_prob, entropy)


def mlp(inputs: int, outputs: int, hidden: int = HIDDEN) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.GELU(), nn.Linear(hidden, outputs))


class BackboneScorer(nn.Module):
    """logit(m | x) = <g(x), u_m> / sqrt(D) + <w(x), z_m>: u_m from the backbone's profile embeddings and numeric
    features z_m (perf, log TokCost, log Lat, reasoning, size), g(x) and the linear w(x) from whatever the caller
    decides on (query, role, budget condition, ...). The linear path lets price sensitivity follow the decision
    features directly (e.g. a budget condition), which the bilinear path alone learns slowly."""

    def __init__(self, feature_dim: int, embed_dim: int, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.backbone = mlp(3 * embed_dim + BACKBONE_NUMERIC_FEATURES, hidden, hidden)
        self.features = mlp(feature_dim, hidden, hidden)
        self.sensitivity = nn.Linear(feature_dim, BACKBONE_NUMERIC_FEATURES)
        self.scale = hidden**-0.5

    def vectors(self, context: ControllerContext) -> torch.Tensor:
        """[M, D + F_numeric] u_m and z_m of the context's kept backbones, side by side."""
        numeric = context.backbone_numeric
        u = self.backbone(torch.cat([context.profile_embeddings.flatten(1), numeric], dim=1))
        return torch.cat([u, numeric], dim=1)

    def forward(self, features: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
        """features [..., F], vectors [M, D + F_numeric] (from `vectors`) -> logits [..., M]."""
        u, numeric = vectors[:, :-BACKBONE_NUMERIC_FEATURES], vectors[:, -BACKBONE_NUMERIC_FEATURES:]
        return self.features(features) @ u.T * self.scale + self.sensitivity(features) @ numeric.T


class RoutingPolicy(nn.Module, ABC):
    """A SampledPolicy whose subclasses say how to decide (`decide`) and what the decisions build (`systems`);
    sampling uses its own seeded generator, so the same seed gives the same training run."""

    def __init__(self, context: ControllerContext, seed: int) -> None:
        super().__init__()
        self.context = context
        self.embed_dim = int(context.role_embeddings.shape[1])
        self.generator = torch.Generator().manual_seed(seed)
        self._agents: dict[tuple[str, str, str], Agent] = {}

    @abstractmethod
    def decide(self, embeddings: torch.Tensor, mode: str, given: Decisions | None = None) -> Step:
        """Sampled, greedy or given decisions for a batch, with their exact log-probability and entropy."""

    @abstractmethod
    def systems(self, decisions: Decisions) -> list[MAS]:
        """The MAS each row of `decisions` builds."""

    def sample(self, embeddings: torch.Tensor) -> tuple[list[MAS], torch.Tensor, torch.Tensor]:
        step = self.decide(embeddings, sampling.SAMPLE)
        return self.systems(step.decisions), step.log_prob, step.entropy

    def greedy(self, embeddings: torch.Tensor) -> list[MAS]:
        with torch.no_grad():
            return self.systems(self.decide(embeddings, sampling.GREEDY).decisions)

    def log_prob_of(self, embeddings: torch.Tensor, decisions: Decisions) -> torch.Tensor:
        """[B] exact log-probability of the given decisions (tests, diagnostics)."""
        return self.decide(embeddings, sampling.GIVEN, decisions).log_prob

    def agent(self, agent_id: str, role: str, backbone: str) -> Agent:
        """Agents are immutable: one object per (id, role, backbone), shared by every MAS that has it."""
        key = (agent_id, role, backbone)
        if key not in self._agents:
            self._agents[key] = Agent(id=agent_id, role=role, backbone=backbone)
        return self._agents[key]

    def panel_mas(self, experts: Sequence[str], lead: str, expert: str) -> MAS:
        """Each expert backbone answers in the role `expert` and the lead backbone, as the decision agent,
        answers last from all their answers; without experts the lead answers alone."""
        decision = self.context.role_names[self.context.decision_index]
        agents = [self.agent(f"e{k}", expert, name) for k, name in enumerate(experts)]
        agents.append(self.agent("d", decision, lead))
        ids = [agent.id for agent in agents]
        return MAS.trusted(agents, [(i, "d") for i in ids[:-1]], "d", order=ids)


def expert_role(roles: RoleSet) -> str:
    """The role an unspecialised expert plays: the library's first solver role (its generalist, e.g.
    Knowledgeable Expert, Mathematician, Programming Expert), since routing methods choose LLMs, not roles."""
    for role in roles:
        if role.kind is RoleKind.SOLVER:
            return role.name
    raise AgentBalanceError(f"role library {roles.source} has no solver role for the experts of a routing baseline")


def single_backbone_outcomes(experiment: Experiment, queries: Sequence[Query]) -> np.ndarray:
    """[items, kept backbones] whether each kept backbone alone (as the decision role) answers each query right
    (its score's right/wrong reading, `verdict`: ensembles fail or not), over the queries where every backbone's
    answer could be graded (the others tell nothing of who is right)."""
    decision = experiment.roles.decision.name
    singles = [MAS.single(decision, name) for name in experiment.kept]
    outcomes = experiment.execute([(single, query) for query in queries for single in singles])
    grades = np.array([verdict(o.score) for o in outcomes], dtype=object).reshape(len(queries), len(singles))
    return grades[(grades != None).all(axis=1)].astype(bool)  # noqa: E711 (element-wise comparison)
