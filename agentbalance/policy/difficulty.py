"""Paper §3.1.2, difficulty estimation: f_diff = frozen sentence embedding + a small MLP head -> d in [0, 1].

Pretrained on items labelled by the fraction of backbones that solve them; it reads text only.
"""

from __future__ import annotations

import torch
from torch import nn


class DifficultyEstimator(nn.Module):
    """The MLP head over a frozen query embedding (the encoder itself never trains)."""

    def __init__(self, embed_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.head = nn.Sequential(nn.Linear(embed_dim, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, query_embeddings: torch.Tensor) -> torch.Tensor:
        """[B, H] -> [B] difficulty in (0, 1): 0 = every backbone solves it, 1 = none does."""
        return torch.sigmoid(self.head(query_embeddings).squeeze(-1))


def pretrain_difficulty(
    estimator: DifficultyEstimator,
    query_embeddings: torch.Tensor,
    solve_rates: torch.Tensor,
    steps: int = 400,
    learning_rate: float = 3e-3,
    weight_decay: float = 1e-3,
) -> float:
    """Fit the head to difficulty = 1 - solve rate (binary cross-entropy on soft labels); returns the last loss."""
    if len(query_embeddings) == 0:
        raise ValueError("no items to pretrain the difficulty estimator on")
    target = (1.0 - solve_rates).clamp(0.0, 1.0)
    optimiser = torch.optim.Adam(estimator.parameters(), lr=learning_rate, weight_decay=weight_decay)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        optimiser.zero_grad()
        loss = nn.functional.binary_cross_entropy(estimator(query_embeddings), target)
        loss.backward()
        optimiser.step()
    return float(loss.detach())
