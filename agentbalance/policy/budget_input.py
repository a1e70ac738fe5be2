"""The budget as the controller's condition input: log budgets, one row per query.

The only place that turns a Budget into tensors; it must never read anything but the budget's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from agentbalance.budgets import Budget

CONDITION_DIM = 2  # log budgets (Tok, Lat) for budget-conditioned control; zeros otherwise
LAT_DIVISOR = 4.0  # log Lat shrunk towards log Tok's range as an input of the networks


def budget_condition(budget: Budget, batch: int) -> torch.Tensor:
    """The budget as the controller's condition input (log scale; 0 = no budget given)."""
    return conditions([budget]).expand(batch, CONDITION_DIM)


def conditions(budgets: Sequence[Budget]) -> torch.Tensor:
    """One condition row per budget, [len(budgets), CONDITION_DIM]."""
    rows = [
        [
            math.log(b.tok) if b.tok is not None else 0.0,
            math.log(b.lat) / LAT_DIVISOR if b.lat is not None else 0.0,
        ]
        for b in budgets
    ]
    return torch.tensor(rows, dtype=torch.float32)


def log_budgets(condition: torch.Tensor) -> torch.Tensor:
    """The log budgets (Tok, Lat) a [B, CONDITION_DIM] condition encodes; 0 where no budget was given."""
    return condition * torch.tensor([1.0, LAT_DIVISOR])
