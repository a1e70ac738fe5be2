"""Budget-conditioned pool selection: over a grid of budgets, the query's pool (its decision agent's) can
follow whatever sequence of pools the best MAS per budget needs, not only ever costlier ones."""

from __future__ import annotations

import torch

from agentbalance.budgets import Budget
from agentbalance.policy.budget_input import CONDITION_DIM, conditions
from agentbalance.policy.selection import PoolSelection


def test_imitation_can_put_every_query_in_a_non_monotone_sequence_of_pools() -> None:
    """date-mot-dev's grid: the cheapest backbone alone (pool 0), another alone (pool 1), a pair of the other
    escalating to the first (pool 0 again), then strong cascades (pool 2). Every query, whatever its
    difficulty, must land in its budget's pool; a shift linear in the log budget can only climb."""
    torch.manual_seed(0)
    budgets = [Budget(tok=0.029 * 2.2**i) for i in range(8)]
    wanted = torch.tensor([0, 1, 0, 2, 2, 2, 2, 2])
    grid = conditions(budgets)
    difficulty = torch.linspace(0.0, 0.95, 64)  # spread like a trained difficulty head's
    selection = PoolSelection(pool_count=4, condition_dim=CONDITION_DIM)
    optimiser = torch.optim.Adam(selection.parameters(), lr=1e-2)
    for _ in range(300):
        targets = torch.randint(len(budgets), (len(difficulty),))
        log_probs = selection(difficulty, grid[targets])
        loss = -log_probs.gather(1, wanted[targets].unsqueeze(1)).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        for target, pool in enumerate(wanted.tolist()):
            chosen = selection(difficulty, grid[target].expand(len(difficulty), -1)).argmax(1)
            assert chosen.tolist() == [pool] * len(difficulty), f"budget {target}"


def test_before_training_the_budget_leaves_the_paper_selection_unchanged() -> None:
    """Untrained, d_eff = d + delta at every budget: harder queries go to costlier pools, as in the paper."""
    selection = PoolSelection(pool_count=3, condition_dim=CONDITION_DIM)
    difficulty = torch.tensor([0.1, 0.5, 0.9])
    for budget in (Budget(tok=0.01), Budget(tok=10.0, lat=60.0), Budget()):
        condition = conditions([budget]).expand(3, -1)
        effective = selection.effective_difficulty(difficulty, condition, delta=0.2)
        assert torch.allclose(effective, difficulty + 0.2)
        assert selection(difficulty, condition).argmax(1).tolist() == [0, 1, 2]
