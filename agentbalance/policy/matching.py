"""Paper §3.1.3, query-conditioned role-backbone matching: p(m | role i) = softmax over i's pool of <v_i, u_m>.

u_m comes from the backbone's profile embeddings and numeric features only, never from its identity,
so a backbone never seen in training is matched as well as a seen one (inductive).
"""

from __future__ import annotations

import torch
from torch import nn

from agentbalance.policy.context import BACKBONE_NUMERIC_FEATURES, ControllerContext


class RoleBackboneMatching(nn.Module):
    """v_i from (role, query, difficulty, budget condition); u_m from (profiles, numeric features)."""

    def __init__(self, embed_dim: int, hidden: int, condition_dim: int) -> None:
        super().__init__()
        self.role_query = nn.Sequential(
            nn.Linear(2 * embed_dim + 1 + condition_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden)
        )
        self.backbone = nn.Sequential(
            nn.Linear(3 * embed_dim + BACKBONE_NUMERIC_FEATURES, hidden), nn.GELU(), nn.Linear(hidden, hidden)
        )
        self.scale = hidden**-0.5

    def backbone_vectors(self, context: ControllerContext) -> torch.Tensor:
        """[M, D] u_m."""
        profiles = context.profile_embeddings.flatten(1)
        return self.backbone(torch.cat([profiles, context.backbone_numeric], dim=1))

    def role_vectors(
        self,
        query_embeddings: torch.Tensor,
        difficulty: torch.Tensor,
        condition: torch.Tensor,
        context: ControllerContext,
    ) -> torch.Tensor:
        """[B, R, D] v_i: each role read against the query (the agent pools see them too)."""
        batch, roles = query_embeddings.shape[0], context.role_count
        features = torch.cat(
            [
                context.role_embeddings.unsqueeze(0).expand(batch, -1, -1),
                query_embeddings.unsqueeze(1).expand(-1, roles, -1),
                difficulty.view(batch, 1, 1).expand(-1, roles, 1),
                condition.unsqueeze(1).expand(-1, roles, -1),
            ],
            dim=2,
        )
        return self.role_query(features)

    def forward(
        self,
        role_vectors: torch.Tensor,
        backbone_vectors: torch.Tensor,
        role_pools: torch.Tensor,
        context: ControllerContext,
    ) -> torch.Tensor:
        """[B, R, M] log-probabilities of each backbone for each role, zero mass outside the role's pool
        (`role_pools` [B, R])."""
        logits = torch.einsum("brd,md->brm", role_vectors, backbone_vectors) * self.scale
        in_pool = context.pool_mask()[role_pools]  # [B, R, M]
        logits = logits.masked_fill(~in_pool, float("-inf"))
        return torch.log_softmax(logits, dim=2)
