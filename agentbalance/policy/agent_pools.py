"""Beyond the paper: the pool each helper agent takes its backbone from, so that a cheap pair can feed a
strong decision agent (an agreement cascade) and every cascade is a MAS the controller can build.

The query's pool (pool selection) stays the decision agent's: it is the tier of the agent that answers.
Every other role chooses a pool of its own, scored from its role-query vector against each pool's
profile and its offset from the query's pool. A learned "stay" bonus starts every helper in the
query's pool, which is the paper's one-pool MAS; REINFORCE moves helpers where it pays.
"""

from __future__ import annotations

import torch
from torch import nn

from agentbalance.policy.context import ControllerContext

POOL_PROFILE_FEATURES = 3  # mean standardised perf, log TokCost and log Lat of a pool's members
STAY_BONUS = 3.0  # initial logit bonus of the query's own pool: about 9 in 10 helpers stay there at first


class AgentPoolChoice(nn.Module):
    """p(pool q | role i) = softmax_q(<W v_i, g(pool q's profile, q - p)> + stay [q = p]) over allowed pools."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.role = nn.Linear(hidden, hidden, bias=False)
        self.pool = nn.Sequential(nn.Linear(POOL_PROFILE_FEATURES + 1, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.stay = nn.Parameter(torch.tensor(STAY_BONUS))
        self.scale = hidden**-0.5

    def forward(
        self,
        role_vectors: torch.Tensor,
        query_pool: torch.Tensor,
        context: ControllerContext,
        max_pool: int | None = None,
        query_pool_only: bool = False,
    ) -> torch.Tensor:
        """role vectors [B, R, D], the query's pool [B] -> [B, R, P] log-probabilities; the decision role's row
        (every row, with `query_pool_only`: the paper's one-pool MAS) puts all its mass on the query's pool,
        and pools above `max_pool` get none."""
        batch, roles, _ = role_vectors.shape
        pools = context.pool_count
        offsets = (torch.arange(pools).unsqueeze(0) - query_pool.unsqueeze(1)).float() / max(pools - 1, 1)  # [B, P]
        profiles = pool_profiles(context).unsqueeze(0).expand(batch, -1, -1)
        pool_vectors = self.pool(torch.cat([profiles, offsets.unsqueeze(2)], dim=2))  # [B, P, D]
        logits = torch.einsum("brd,bpd->brp", self.role(role_vectors), pool_vectors) * self.scale
        same = torch.arange(pools).unsqueeze(0) == query_pool.unsqueeze(1)  # [B, P]
        logits = logits + self.stay * same.unsqueeze(1).float()
        allowed = torch.ones(batch, roles, pools, dtype=torch.bool)
        if max_pool is not None:
            allowed &= (torch.arange(pools) <= max_pool).view(1, 1, -1)
        allowed[:, context.decision_index] = same
        if query_pool_only:
            allowed[:] = same.unsqueeze(1)
        return torch.log_softmax(logits.masked_fill(~allowed, float("-inf")), dim=2)


def pool_profiles(context: ControllerContext) -> torch.Tensor:
    """[P, POOL_PROFILE_FEATURES]: each pool's mean standardised perf, log TokCost and log Lat."""
    mask = context.pool_mask().float()  # [P, M]
    numeric = context.backbone_numeric[:, :POOL_PROFILE_FEATURES]
    return (mask @ numeric) / mask.sum(1, keepdim=True).clamp_min(1.0)
