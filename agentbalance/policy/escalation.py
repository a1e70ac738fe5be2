"""Beyond the paper: the learned condition. Every kept agent with at least two inputs may run only when
its inputs disagree (`Agent.when = "disagree"`); a Bernoulli flag per such agent decides it.

The flag sees what the saving and the risk depend on: the agent's own cost and latency, its inputs'
cost, how many inputs it has, and the budget. REINFORCE sees the realised cost of each execution, so
the expected saving is learned, never computed by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from agentbalance.policy.sampling import GIVEN, bernoulli_entropy, bernoulli_log_prob, flags

MIN_INPUTS = 2  # a condition on the inputs' agreement needs at least two inputs
START_BIAS = -1.5  # at first about 1 in 5 eligible agents runs only on disagreement


@dataclass(frozen=True)
class EscalationChoice:
    """Which agents are conditional ([B, R] bool, role-index space), with the flags' log-probability."""

    conditional: torch.Tensor
    log_prob: torch.Tensor  # [B]
    entropy: torch.Tensor  # [B]


class EscalationFlags(nn.Module):
    """p_conditional_j = sigmoid(MLP([h_j, its log cost and latency, its inputs' mean ones, #inputs, condition]))."""

    def __init__(self, hidden: int, condition_dim: int) -> None:
        super().__init__()
        self.score = nn.Sequential(nn.Linear(hidden + 5 + condition_dim, hidden), nn.GELU(), nn.Linear(hidden, 1))
        nn.init.constant_(self.score[-1].bias, START_BIAS)

    def forward(
        self,
        agents: torch.Tensor,
        log_latency: torch.Tensor,
        log_cost: torch.Tensor,
        keep: torch.Tensor,
        edges: torch.Tensor,
        condition: torch.Tensor,
        mode: str,
        given: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
        enabled: bool = True,
    ) -> EscalationChoice:
        """agents [B, R, D], log latency/cost [B, R], keep [B, R], edges [B, R, R] (i -> j) -> the flags.
        An agent with fewer than MIN_INPUTS inputs carries no flag (none does unless `enabled`); a given
        flag on one is impossible (-inf)."""
        roles = agents.shape[1]
        inputs = edges.float()  # [B, source, target]
        count = inputs.sum(dim=1)  # [B, R] inputs per agent
        eligible = keep & (count >= MIN_INPUTS) & enabled
        per_input = count.clamp_min(1.0)
        input_cost = torch.einsum("bij,bi->bj", inputs, log_cost) / per_input
        input_latency = torch.einsum("bij,bi->bj", inputs, log_latency) / per_input
        features = torch.cat(
            [
                agents,
                torch.stack([log_cost, log_latency, input_cost, input_latency, count / roles], dim=2),
                condition.unsqueeze(1).expand(-1, roles, -1),
            ],
            dim=2,
        )
        logits = self.score(features).squeeze(-1)
        chosen = flags(logits, mode, generator, given)
        zeros = torch.zeros_like(logits)
        log_prob = torch.where(eligible, bernoulli_log_prob(chosen, logits), zeros).sum(1)
        if mode == GIVEN:
            impossible = (chosen & ~eligible).any(dim=1)
            log_prob = torch.where(impossible, torch.full_like(log_prob, float("-inf")), log_prob)
        entropy = torch.where(eligible, bernoulli_entropy(logits), zeros).sum(1)
        return EscalationChoice(chosen & eligible, log_prob, entropy)
