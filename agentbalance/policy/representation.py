"""Paper §3.2.1, unified agent representation: h_i = LayerNorm(r_i + gamma * W_ctx attn(q_i, K, V)).

Each candidate agent attends over the query and the backbones its peers were given, so gating and
topology see role, backbone capability, query and cost together. The result is layer-normalised: the
topology's edge scorer is bilinear in it, so imitating sharp edges otherwise grows its norm without
bound, and the gating and escalation networks that read it saturate (mmlu-pro-dev, seed 0: entries of
200 after 1000 imitation steps, of 2500 after 2000; every gating unit then dead and four budgets' cascades
built as one backbone alone).
"""

from __future__ import annotations

import torch
from torch import nn


class AgentRepresentation(nn.Module):
    """r_i = W_role role_i + u_{m_i}; keys/values: the query token and every agent's backbone vector."""

    def __init__(self, embed_dim: int, hidden: int, heads: int = 2) -> None:
        super().__init__()
        self.role = nn.Linear(embed_dim, hidden)
        self.query = nn.Linear(embed_dim, hidden)
        self.attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.context_projection = nn.Linear(hidden, hidden)
        self.gamma = nn.Parameter(torch.tensor(0.5))
        self.norm = nn.LayerNorm(hidden)

    def forward(
        self, role_embeddings: torch.Tensor, query_embeddings: torch.Tensor, assigned_backbones: torch.Tensor
    ) -> torch.Tensor:
        """role [R, H], query [B, H], assigned backbone vectors [B, R, D] -> h [B, R, D]."""
        batch = query_embeddings.shape[0]
        own = self.role(role_embeddings).unsqueeze(0).expand(batch, -1, -1) + assigned_backbones
        context = torch.cat([self.query(query_embeddings).unsqueeze(1), assigned_backbones], dim=1)
        attended, _ = self.attention(own, context, context, need_weights=False)
        return self.norm(own + self.gamma * self.context_projection(attended))

    def roles_only(self, role_embeddings: torch.Tensor, batch: int) -> torch.Tensor:
        """The ablation "role-only representation": h_i = W_role role_i, blind to query and backbones."""
        return self.norm(self.role(role_embeddings)).unsqueeze(0).expand(batch, -1, -1)
