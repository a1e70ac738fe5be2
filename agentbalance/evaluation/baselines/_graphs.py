"""Shared ground of the learned-topology baselines: the role graph, Bernoulli decisions over it, valid MAS from them.

Only topology and agent presence are learned here; every agent runs on the one `topology_backbone`, never a
per-agent choice of LLM (that is what agentbalance adds and these methods lack).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import (
    Constructor,
    Penalty,
    PenaltySweptMethod,
    PolicyGradientConfig,
    penalty_of,
    topology_backbone,
    train_sampled_policy,
)
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS, Agent
from agentbalance.policy.sampling import GREEDY, SAMPLE, bernoulli_entropy, bernoulli_log_prob, flags, seeded


class RoleGraph:
    """One candidate agent per role (the others in library order, the decision agent last) and the forward edges
    between them. Any subset of these edges is acyclic and leaves the decision agent without outgoing edges, so
    a MAS is valid once the agents without a path to the decision agent are dropped."""

    def __init__(self, role_names: Sequence[str], decision_index: int, backbone: str) -> None:
        if not 0 <= decision_index < len(role_names):
            raise AgentBalanceError(f"decision role index {decision_index} is outside the {len(role_names)} roles")
        self.role_order: tuple[int, ...] = (
            *(r for r in range(len(role_names)) if r != decision_index),
            decision_index,
        )
        self.backbone = backbone
        self.agents = tuple(Agent(id=f"a{r}", role=role_names[r], backbone=backbone) for r in self.role_order)
        self.pairs: tuple[tuple[int, int], ...] = tuple(
            (source, target) for source in range(self.size) for target in range(source + 1, self.size)
        )
        self._outgoing = tuple(
            tuple((e, target) for e, (source, target) in enumerate(self.pairs) if source == position)
            for position in range(self.size)
        )

    @classmethod
    def of(cls, experiment: Experiment) -> RoleGraph:
        return cls(experiment.context.role_names, experiment.context.decision_index, topology_backbone(experiment))

    @property
    def size(self) -> int:
        return len(self.role_order)

    @property
    def edge_count(self) -> int:
        return len(self.pairs)

    def mas(self, keep: Sequence[bool] | None, edges: Sequence[bool]) -> MAS:
        """The MAS of kept agents ([size - 1] flags, the decision agent always stays; None keeps all) and chosen
        edges ([edge_count] flags, in `pairs` order), without the agents that cannot reach the decision agent."""
        last = self.size - 1
        alive = [True] * self.size if keep is None else [*keep, True]
        reaches = [False] * last + [True]
        for position in range(last - 1, -1, -1):
            reaches[position] = alive[position] and any(edges[e] and reaches[t] for e, t in self._outgoing[position])
        members = [position for position in range(self.size) if reaches[position]]
        chosen = [
            (self.agents[source].id, self.agents[target].id)
            for e, (source, target) in enumerate(self.pairs)
            if edges[e] and reaches[source] and reaches[target]
        ]
        agents = [self.agents[position] for position in members]
        return MAS.trusted(agents, chosen, self.agents[last].id, order=[agent.id for agent in agents])


@dataclass(frozen=True)
class GraphDecisions:
    """Independent Bernoulli decisions for a batch: which optional agents stay, which edges exist."""

    keep: torch.Tensor | None  # [N, size - 1] bool; None: every agent is a candidate
    edges: torch.Tensor  # [N, edge_count] bool
    log_prob: torch.Tensor  # [N] sum over the decided variables
    entropy: torch.Tensor  # [N]


class GraphPolicy(nn.Module, ABC):
    """A `SampledPolicy` over the role graph; subclasses only say how the logits depend on the query.

    `allowed` marks the edges still in play (AgentPrune-style pruning clears some); a cleared edge is never
    drawn and adds nothing to the log-probability. Sampling uses its own generator seeded with `seed`, so the
    same seed gives the same training run."""

    def __init__(self, graph: RoleGraph, seed: int) -> None:
        super().__init__()
        self.graph = graph
        self.generator = torch.Generator().manual_seed(seed)
        self.register_buffer("allowed", torch.ones(graph.edge_count, dtype=torch.bool))

    @abstractmethod
    def logits(self, embeddings: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Query embeddings [N, H] -> keep logits [N, size - 1] (or None: no node decisions), edge logits [N, E]."""

    def decide(self, embeddings: torch.Tensor, greedy: bool) -> GraphDecisions:
        """Sampled (Bernoulli, from the policy's generator) or most likely (p > 0.5) decisions with their
        log-probability and entropy."""
        mode = GREEDY if greedy else SAMPLE
        keep_logits, edge_logits = self.logits(embeddings)
        allowed = self.allowed.expand_as(edge_logits)
        edges, edge_log_prob, edge_entropy = _bernoulli(edge_logits, mode, self.generator, allowed)
        if keep_logits is None:
            return GraphDecisions(None, edges, edge_log_prob, edge_entropy)
        every = torch.ones_like(keep_logits, dtype=torch.bool)
        keep, keep_log_prob, keep_entropy = _bernoulli(keep_logits, mode, self.generator, every)
        return GraphDecisions(keep, edges, keep_log_prob + edge_log_prob, keep_entropy + edge_entropy)

    def to_masses(self, decisions: GraphDecisions) -> list[MAS]:
        edge_rows = decisions.edges.tolist()
        keep_rows = decisions.keep.tolist() if decisions.keep is not None else [None] * len(edge_rows)
        return [self.graph.mas(keep, edges) for keep, edges in zip(keep_rows, edge_rows, strict=True)]

    def sample(self, embeddings: torch.Tensor) -> tuple[list[MAS], torch.Tensor, torch.Tensor]:
        decisions = self.decide(embeddings, greedy=False)
        return self.to_masses(decisions), decisions.log_prob, decisions.entropy

    def greedy(self, embeddings: torch.Tensor) -> list[MAS]:
        return self.to_masses(self.decide(embeddings, greedy=True))


def _bernoulli(
    logits: torch.Tensor, mode: str, generator: torch.Generator, allowed: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Decisions, summed log-probability and entropy of independent Bernoulli(sigmoid(logits)) over `allowed`."""
    decisions = flags(logits, mode, generator) & allowed
    log_prob, entropy = bernoulli_log_prob(decisions, logits), bernoulli_entropy(logits)
    zero = torch.zeros((), dtype=logits.dtype)
    return decisions, torch.where(allowed, log_prob, zero).sum(-1), torch.where(allowed, entropy, zero).sum(-1)


class LearnedGraphMethod(PenaltySweptMethod, ABC):
    """A `Method` whose settings are the shared cost-penalty grid and whose fit trains a `GraphPolicy` by REINFORCE
    with the shared reward; `config` shortens training (tests), None is the shared default budget."""

    name: str

    def __init__(self, config: PolicyGradientConfig | None = None) -> None:
        self.config = config or PolicyGradientConfig()

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        penalty = penalty_of(experiment, setting)
        graph = RoleGraph.of(experiment)
        with seeded(experiment.seed):  # the initial parameters, so one setting always fits to the same MAS
            policy = self.policy(experiment, graph)
        return self.train(policy, experiment, penalty)

    @abstractmethod
    def policy(self, experiment: Experiment, graph: RoleGraph) -> GraphPolicy:
        """A fresh, untrained policy of this method over the role graph, sampling with `experiment.seed`."""

    def train(self, policy: GraphPolicy, experiment: Experiment, penalty: Penalty) -> Constructor:
        return train_sampled_policy(policy, experiment, penalty, self.config)


def query_width(experiment: Experiment) -> int:
    """The width of the query embeddings the policies read."""
    return int(next(iter(experiment.embeddings.values())).shape[-1])
