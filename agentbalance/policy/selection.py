"""Paper §3.1.2, difficulty-aware pool selection: d_eff = d + delta -> a distribution over ordered pools.

Budget-conditioned, d_eff = d * scale(budget) + shift(budget) + delta, where scale and shift can follow any
sequence of pools over a budget grid.

Ordinal (cumulative-logit) thresholds with a temperature, so the choice has an exact log-probability;
pools above a user cap are masked out, never sampled.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from agentbalance.policy.budget_input import log_budgets

# the budget features of the selection: Gaussian bumps over each log budget, every half a log unit (a
# factor 1.65) from e^-12 to e^8 (from 6e-6 to 3000 USD per 100 queries or seconds per query)
BUMP_CENTRES = (-12.0, 8.0, 0.5)  # first, last, spacing
BUMP_WIDTH = 0.5


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
        # per budget, a shift of delta and a log-scale of the difficulty, each linear in bumps over the log
        # budgets: the best MAS per budget need not decide on ever costlier pools (date-mot-dev: the cheapest
        # backbone alone, then another alone, then a pair of the other escalating to the first), which a shift
        # linear in the log budget cannot follow and a small tanh network learned too slowly to imitate (after
        # 300 imitation steps, 3 of 44 validation queries at date-mot-dev's second budget); the scale because
        # at some budgets every query belongs in one pool, at others the hard ones go higher
        first, last, spacing = BUMP_CENTRES
        self.register_buffer("bump_centres", torch.arange(first, last + spacing / 2, spacing), persistent=False)
        self.condition_head = nn.Linear(condition_dim * len(self.bump_centres), 2)
        nn.init.zeros_(self.condition_head.weight)  # no shift and scale 1 until training asks otherwise
        nn.init.zeros_(self.condition_head.bias)

    def thresholds(self) -> torch.Tensor:
        if self.pool_count == 1:
            return torch.zeros(0)
        increments = functional.softplus(self.raw_gaps)
        return torch.cat([self.first_threshold.view(1), self.first_threshold + torch.cumsum(increments, 0)])

    def effective_difficulty(
        self, difficulty: torch.Tensor, condition: torch.Tensor, delta: float = 0.0
    ) -> torch.Tensor:
        """[B] difficulty -> [B] d_eff, what the thresholds split: scaled and shifted per budget, then by delta."""
        bumps = torch.exp(-0.5 * ((log_budgets(condition).unsqueeze(-1) - self.bump_centres) / BUMP_WIDTH) ** 2)
        shift, log_scale = self.condition_head(bumps.flatten(1)).unbind(-1)
        return difficulty * torch.exp(log_scale) + delta + self.offset + shift

    def forward(
        self, difficulty: torch.Tensor, condition: torch.Tensor, delta: float = 0.0, max_pool: int | None = None
    ) -> torch.Tensor:
        """[B] difficulty -> [B, P] log-probabilities over pools (cheapest first), capped at `max_pool`."""
        batch = difficulty.shape[0]
        if self.pool_count == 1:
            return torch.zeros(batch, 1)
        effective = self.effective_difficulty(difficulty, condition, delta)
        cumulative = torch.sigmoid((self.thresholds().unsqueeze(0) - effective.unsqueeze(1)) / self.temperature)
        cumulative = torch.cat([torch.zeros(batch, 1), cumulative, torch.ones(batch, 1)], dim=1)
        log_probabilities = torch.log((cumulative[:, 1:] - cumulative[:, :-1]).clamp_min(1e-9))
        if max_pool is not None:  # masked after the log: log(0) would send NaN gradients to every threshold
            log_probabilities = log_probabilities.masked_fill(torch.arange(self.pool_count) > max_pool, float("-inf"))
        return torch.log_softmax(log_probabilities, dim=1)
