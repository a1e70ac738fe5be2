"""G-Designer-style baseline (our re-implementation of the idea of Zhang et al., 2025): a GCN over the role graph
with a virtual task node turns each query into edge probabilities. It must never choose LLMs or emit a cycle.

Node features are the role embeddings (name + description) and, on the virtual task node, the query embedding,
each projected to a small width. The anchor graph joins the task node to every role node (the roles learn of the
query and of each other through it); two torch-geometric `GCNConv` layers with residual connections (so role
nodes stay distinct) encode it. Edge logits are scaled inner products of the role nodes' encodings, for forward
edges only (library order, the decision agent last), so every sampled graph is a DAG. Edges are Bernoulli
draws trained by REINFORCE with the shared reward; sparsity comes from the cost penalty, not a separate
regulariser. The deployed MAS keeps edges with p > 0.5, minus agents with no path to the decision agent. Every
agent runs on `topology_backbone(experiment)`: the strongest kept backbone whose TokCost is at most the kept
backbones' median (these methods use one fixed LLM).
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GCNConv

from agentbalance.evaluation.baselines._graphs import GraphPolicy, LearnedGraphMethod, RoleGraph, query_width
from agentbalance.experiment import Experiment


class GDesignerPolicy(GraphPolicy):
    """Edge logit (i -> j) = <z_i, z_j> / sqrt(width) + b, z = GCN(roles + virtual task node)."""

    def __init__(
        self, graph: RoleGraph, role_embeddings: torch.Tensor, query_dim: int, seed: int, width: int = 32
    ) -> None:
        super().__init__(graph, seed)
        self.register_buffer("roles", role_embeddings[list(graph.role_order)].clone())
        members = torch.arange(graph.size)
        task = torch.full_like(members, graph.size)  # the virtual task node follows the role nodes
        self.register_buffer("anchor", torch.stack([torch.cat([members, task]), torch.cat([task, members])]))
        self.register_buffer("sources", torch.tensor([source for source, _ in graph.pairs], dtype=torch.long))
        self.register_buffer("targets", torch.tensor([target for _, target in graph.pairs], dtype=torch.long))
        self.role_input = nn.Linear(role_embeddings.shape[1], width)
        self.task_input = nn.Linear(query_dim, width)
        self.layers = nn.ModuleList([GCNConv(width, width), GCNConv(width, width)])
        self.scale = width**-0.5
        self.bias = nn.Parameter(torch.zeros(()))

    def logits(self, embeddings: torch.Tensor) -> tuple[None, torch.Tensor]:
        batch = embeddings.shape[0]
        roles = self.role_input(self.roles).unsqueeze(0).expand(batch, -1, -1)
        nodes = torch.cat([roles, self.task_input(embeddings).unsqueeze(1)], dim=1)  # [N, size + 1, width]
        for layer in self.layers:
            nodes = nodes + torch.relu(layer(nodes, self.anchor))
        scores = (nodes[:, self.sources] * nodes[:, self.targets]).sum(-1)
        return None, scores * self.scale + self.bias


class GDesignerStyle(LearnedGraphMethod):
    name = "gdesigner-style"

    def policy(self, experiment: Experiment, graph: RoleGraph) -> GDesignerPolicy:
        query_dim = query_width(experiment)
        return GDesignerPolicy(graph, experiment.context.role_embeddings, query_dim, experiment.seed)
