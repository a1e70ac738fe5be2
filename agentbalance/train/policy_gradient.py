"""The one policy-gradient stack: reward, REINFORCE loss, config and optimiser step, shared by agentbalance's
Trainer and every learned baseline, so a fix to one is a fix to all.

R = Perf − λtok·Tok − λlat·Lat per sampled MAS, Perf being the answer's quality score in [0, 1] (1/0 on right/wrong
tasks); an answer that could not be graded has no reward (NaN) and is
masked out of the loss, never counted as wrong. It never executes a MAS and never samples one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.runtime.execution import Outcome

GRADIENT_CLIP = 5.0  # max gradient norm of every policy-gradient step


@dataclass(frozen=True)
class PolicyGradientConfig:
    """The REINFORCE knobs every learned method shares (the baselines' defaults; `TrainConfig` extends it)."""

    epochs: int = 12
    batch_queries: int = 32
    samples_per_query: int = 4
    learning_rate: float = 1e-2
    entropy_bonus: float = 0.01


@dataclass(frozen=True)
class Penalty:
    """The reward's cost terms: R = score - lambda_tok * Tok - lambda_lat * Lat (Tok: USD per 100 queries)."""

    lambda_tok: float
    lambda_lat: float

    def reward(self, outcome: Outcome) -> float:
        """The reward of one run; NaN when its answer could not be graded (masked out of the loss)."""
        if outcome.score is None:
            return math.nan
        return float(outcome.score) - self.lambda_tok * 100 * outcome.cost_usd - self.lambda_lat * outcome.latency_s


def epoch_batches(count: int, batch: int, generator: np.random.Generator) -> Iterator[np.ndarray]:
    """The row indices of one epoch's batches: a fresh permutation of the training split, cut in order."""
    order = generator.permutation(count)
    for start in range(0, count, batch):
        yield order[start : start + batch]


def sampled_pairs(systems: Sequence[MAS], batch: Sequence[Query], samples: int) -> list[tuple[MAS, Query]]:
    """Each sampled MAS with its query: `samples` consecutive MAS per query of the batch (query-major)."""
    return [(mas, batch[index // samples]) for index, mas in enumerate(systems)]


def reward_matrix(
    outcomes: Sequence[Outcome],
    penalties: Sequence[Penalty],
    samples: int,
    bonus: Sequence[float] | None = None,
) -> torch.Tensor:
    """[queries, samples] rewards of the sampled runs (query-major), each under its own penalty, plus a
    method's own shaping term per run when given (`bonus`); NaN where the answer could not be graded."""
    rewards = [penalty.reward(o) for o, penalty in zip(outcomes, penalties, strict=True)]
    if bonus is not None:
        rewards = [r + b for r, b in zip(rewards, bonus, strict=True)]
    return torch.tensor(rewards, dtype=torch.float64).view(-1, samples)


def policy_gradient_loss(
    reward: torch.Tensor,
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    entropy_bonus: float,
    groups: Sequence[int] | None = None,
) -> torch.Tensor:
    """REINFORCE with the mean reward of the other samples of the same query as baseline.

    `reward` is [queries, samples] (NaN: ungraded, no signal); `log_prob` and `entropy` are flat,
    query-major. Advantages are normalised, so a step has the same size whatever the scale of the cost
    penalties; with `groups` (one label per query: its target budget) each group is normalised on its
    own, so queries trained under a tight budget, whose penalties are large, do not drown the signal of
    the loose ones.
    """
    tolerance = 16 * torch.finfo(reward.dtype).eps  # rounding error of the mean, at the rewards' precision
    reward = reward.double()
    graded = ~torch.isnan(reward)
    if bool(graded.all()):
        advantage = reward - reward.mean(dim=1, keepdim=True)
    else:  # the baseline over the graded samples only; ungraded samples get no advantage
        counts = graded.sum(dim=1, keepdim=True).clamp_min(1)
        baseline = torch.where(graded, reward, torch.zeros_like(reward)).sum(dim=1, keepdim=True) / counts
        advantage = torch.where(graded, reward - baseline, torch.zeros_like(reward))
        reward = torch.where(graded, reward, torch.zeros_like(reward))
    # samples that scored the same carry no signal: their difference from the mean is rounding error,
    # which normalisation would blow up into a full-size step in a random direction (and Adam, whatever
    # the gradient's size, takes it at full speed)
    advantage[advantage.abs() <= tolerance * (1.0 + reward.abs())] = 0.0
    labels = torch.as_tensor(list(groups) if groups is not None else [0] * len(reward))
    for label in labels.unique():
        rows = labels == label
        group = advantage[rows]
        if not bool(graded.all()):
            group = group[graded[rows]]
        spread = group.std() if group.numel() > 1 else group.new_tensor(0.0)
        if spread > 0:  # a group with no spread stays zero
            advantage[rows] = advantage[rows] / (spread + 1e-6)
    return -(advantage.reshape(-1).to(log_prob.dtype) * log_prob).mean() - entropy_bonus * entropy.mean()


def mean_reward(reward: torch.Tensor) -> float:
    """The mean reward of a batch over its graded samples (for the training history)."""
    return float(reward.mean()) if not bool(torch.isnan(reward).any()) else float(reward.nanmean())


def optimiser_step(optimiser: torch.optim.Optimizer, loss: torch.Tensor, parameters: Sequence[nn.Parameter]) -> None:
    """One clipped gradient step."""
    optimiser.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(parameters, GRADIENT_CLIP)
    optimiser.step()
