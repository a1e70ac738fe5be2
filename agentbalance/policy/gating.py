"""Paper §3.2.2, agent gating: a Bernoulli keep-probability per candidate agent.

The decision agent always stays (it carries no gate), and it may stay alone: one cheap agent is a valid MAS.
"""

from __future__ import annotations

import torch
from torch import nn


class AgentGating(nn.Module):
    """p_keep_i = sigmoid(MLP([h_i, log latency, log cost of its backbone, budget condition]))."""

    def __init__(self, hidden: int, condition_dim: int) -> None:
        super().__init__()
        self.score = nn.Sequential(nn.Linear(hidden + 2 + condition_dim, hidden), nn.GELU(), nn.Linear(hidden, 1))
        nn.init.constant_(self.score[-1].bias, -0.5)  # start lean: about 4 in 10 optional agents kept

    def forward(
        self, agents: torch.Tensor, log_latency: torch.Tensor, log_cost: torch.Tensor, condition: torch.Tensor
    ) -> torch.Tensor:
        """agents [B, R, D], log latency/cost [B, R] -> [B, R] keep logits."""
        roles = agents.shape[1]
        features = torch.cat(
            [agents, log_latency.unsqueeze(-1), log_cost.unsqueeze(-1), condition.unsqueeze(1).expand(-1, roles, -1)],
            dim=2,
        )
        return self.score(features).squeeze(-1)
