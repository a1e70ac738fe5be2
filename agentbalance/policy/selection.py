"""Paper §3.1.2, difficulty-aware pool selection: d_eff = d + delta -> a distribution over ordered pools.

Ordinal (cumulative-logit) thresholds with a temperature, so the choice has an exact log-probability;
pools above a user cap are masked out, never sampled.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional


class PoolSelection(nn.Module):
    """P(pool <= p) = sigmoid((thr_p - d_eff) / temperature); harder queries go to costlier tiers."""

    def __init__(self, pool_count: int, condition_dim: int, temperature: float = 0.15) -> None:
        super().__init__()
        self.pool_count = pool_count
        self.temperature = temperature
        # thresholds start evenly spread over (0, 1): thr_p = first + cumulative softplus increments
        self.first_threshold = nn.Parameter(torch.tensor(1.0 / pool_count))
        gaps = torch.full((max(pool_count - 2, 0),), 1.0 / pool_count)
        self.raw_gaps = nn.Parameter(torch.log(torch.expm1(gaps)))
        self.offset = nn.Parameter(torch.tensor(0.0))  # the learned part of delta
        self.condition_offset = nn.Linear(condition_dim, 1)  # budget-conditioned shift of delta
        nn.init.zeros_(self.condition_offset.weight)
        nn.init.zeros_(self.condition_offset.bias)

    def thresholds(self) -> torch.Tensor:
        if self.pool_count == 1:
            return torch.zeros(0)
        increments = functional.softplus(self.raw_gaps)
        return torch.cat([self.first_threshold.view(1), self.first_threshold + torch.cumsum(increments, 0)])

    def forward(
        self, difficulty: torch.Tensor, condition: torch.Tensor, delta: float = 0.0, max_pool: int | None = None
    ) -> torch.Tensor:
        """[B] difficulty -> [B, P] log-probabilities over pools (cheapest first), capped at `max_pool`."""
        batch = difficulty.shape[0]
        if self.pool_count == 1:
            return torch.zeros(batch, 1)
        effective = difficulty + delta + self.offset + self.condition_offset(condition).squeeze(-1)
        cumulative = torch.sigmoid((self.thresholds().unsqueeze(0) - effective.unsqueeze(1)) / self.temperature)
        cumulative = torch.cat([torch.zeros(batch, 1), cumulative, torch.ones(batch, 1)], dim=1)
        log_probabilities = torch.log((cumulative[:, 1:] - cumulative[:, :-1]).clamp_min(1e-9))
        if max_pool is not None:  # masked after the log: log(0) would send NaN gradients to every threshold
            log_probabilities = log_probabilities.masked_fill(torch.arange(self.pool_count) > max_pool, float("-inf"))
        return torch.log_softmax(log_probabilities, dim=1)
