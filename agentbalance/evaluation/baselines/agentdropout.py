"""AgentDropout-style baseline (our re-implementation of the idea of Wang et al., 2025): node-dropout and
edge-dropout logits over the complete role graph. It must never choose LLMs or drop the decision agent.

The original learns which agents and which messages to drop from a complete graph; here a small MLP over the
query embedding gives one keep logit per optional agent and one logit per forward edge (the decision agent
last), so the dropout may differ by query (a superset of the original's one graph per task: the output bias
alone is that graph). Decisions are independent Bernoulli draws trained by REINFORCE with the shared reward;
the deployed MAS keeps what has p > 0.5, minus agents with no path to the decision agent. Every agent runs on
`topology_backbone(experiment)`: the strongest kept backbone whose TokCost is at most the kept backbones'
median (these methods use one fixed LLM).
"""

from __future__ import annotations

import torch
from torch import nn

from agentbalance.evaluation.baselines._graphs import GraphPolicy, LearnedGraphMethod, RoleGraph, query_width
from agentbalance.experiment import Experiment


class AgentDropoutPolicy(GraphPolicy):
    """[node keep logits, edge logits] = MLP(query embedding), starting at p = 0.5 everywhere."""

    def __init__(self, graph: RoleGraph, query_dim: int, seed: int, hidden: int = 64) -> None:
        super().__init__(graph, seed)
        self.head = nn.Sequential(
            nn.Linear(query_dim, hidden), nn.GELU(), nn.Linear(hidden, graph.size - 1 + graph.edge_count)
        )
        nn.init.zeros_(self.head[-1].weight)
        nn.init.zeros_(self.head[-1].bias)

    def logits(self, embeddings: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.head(embeddings)
        return scores[:, : self.graph.size - 1], scores[:, self.graph.size - 1 :]


class AgentDropoutStyle(LearnedGraphMethod):
    name = "agentdropout-style"

    def policy(self, experiment: Experiment, graph: RoleGraph) -> AgentDropoutPolicy:
        return AgentDropoutPolicy(graph, query_width(experiment), experiment.seed)
