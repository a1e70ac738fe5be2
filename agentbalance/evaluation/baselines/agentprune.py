"""AgentPrune-style baseline (our re-implementation of the idea of Zhang et al., 2025): learned edge logits over
the complete role graph, then one-shot magnitude pruning. It must never choose LLMs or see the query's text.

The original learns one communication graph per task, not per query: the edge logits here are plain parameters
over the spatial edges of the complete role graph (forward in library order, the decision agent last), with
p = 0.5 at the start. Training runs REINFORCE with the shared reward for the first half of the epochs; then the
lowest-probability `PRUNING_RATIO` of the edges are cut for good and the survivors train for the other half.
The deployed graph keeps the surviving edges with p > 0.5; agents left with no path to the decision agent are
dropped (they would cost without contributing). Every agent runs on `topology_backbone(experiment)`: the
strongest kept backbone whose TokCost is at most the kept backbones' median (these methods use one fixed LLM).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from agentbalance.evaluation.baselines._graphs import GraphPolicy, LearnedGraphMethod, RoleGraph
from agentbalance.evaluation.baselines.base import Constructor, Penalty, train_sampled_policy
from agentbalance.experiment import Experiment

PRUNING_RATIO = 0.5  # the fraction of edges cut after the first half of training


class AgentPrunePolicy(GraphPolicy):
    """One logit per spatial edge, shared by every query."""

    def __init__(self, graph: RoleGraph, seed: int) -> None:
        super().__init__(graph, seed)
        self.edge_logits = nn.Parameter(torch.zeros(graph.edge_count))

    def logits(self, embeddings: torch.Tensor) -> tuple[None, torch.Tensor]:
        return None, self.edge_logits.expand(embeddings.shape[0], -1)

    def prune(self, ratio: float) -> None:
        """Cut the `ratio` of the still-allowed edges with the lowest learned probability (ties: later edges)."""
        allowed = self.allowed.nonzero().squeeze(-1)
        cut = math.floor(ratio * len(allowed))
        ranked = torch.argsort(self.edge_logits.detach()[allowed], descending=True, stable=True)
        self.allowed[allowed[ranked[len(allowed) - cut :]]] = False


class AgentPruneStyle(LearnedGraphMethod):
    name = "agentprune-style"

    def policy(self, experiment: Experiment, graph: RoleGraph) -> AgentPrunePolicy:
        return AgentPrunePolicy(graph, experiment.seed)

    def train(self, policy: GraphPolicy, experiment: Experiment, penalty: Penalty) -> Constructor:
        assert isinstance(policy, AgentPrunePolicy)
        before = (self.config.epochs + 1) // 2
        train_sampled_policy(policy, experiment, penalty, dataclasses.replace(self.config, epochs=before))
        policy.prune(PRUNING_RATIO)
        after = dataclasses.replace(self.config, epochs=self.config.epochs - before)
        return train_sampled_policy(policy, experiment, penalty, after)
