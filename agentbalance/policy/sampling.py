"""Every random draw of a policy: categorical and Bernoulli choices (given, greedy or sampled), their entropies.

It must never touch torch's global random state: a draw takes an explicit `torch.Generator`, and `seeded`
initialises parameters under a fork of the global state that leaves it exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

SAMPLE, GREEDY, GIVEN = "sample", "greedy", "given"
NEGATIVE = -1e9  # a finite stand-in for -inf, so masked terms never produce NaN gradients


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run a block (parameter initialisation) under `seed` without touching the caller's torch random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def required(generator: torch.Generator | None) -> torch.Generator:
    """The generator a draw takes; sampling without one is a mistake (it would read torch's global state)."""
    if generator is None:
        raise ValueError("sampling draws from an explicit torch.Generator: pass generator=")
    return generator


def categorical(
    log_probs: torch.Tensor,
    mode: str,
    generator: torch.Generator | None = None,
    given: torch.Tensor | None = None,
) -> torch.Tensor:
    """An index along the last dimension of `log_probs` (any leading shape; -inf or NEGATIVE: not allowed):
    `given` (mode "given"), the most likely ("greedy") or drawn from `generator` ("sample")."""
    if mode == GIVEN:
        if given is None:
            raise ValueError("mode 'given' needs the given decisions")
        return given
    if mode == GREEDY:
        return log_probs.argmax(dim=-1)
    if mode == SAMPLE:
        probabilities = log_probs.detach().exp()
        rows = probabilities.reshape(-1, probabilities.shape[-1])
        return torch.multinomial(rows, 1, generator=required(generator)).view(probabilities.shape[:-1])
    raise ValueError(f"unknown mode {mode!r}")


def flags(
    logits: torch.Tensor,
    mode: str,
    generator: torch.Generator | None = None,
    given: torch.Tensor | None = None,
) -> torch.Tensor:
    """Independent Bernoulli flags (bool, the shape of `logits`) with p = sigmoid(logits): `given` (mode
    "given", bool or 0/1), p > 1/2 ("greedy") or drawn from `generator` ("sample")."""
    if mode == GIVEN:
        if given is None:
            raise ValueError("mode 'given' needs the given decisions")
        return given > 0
    if mode == GREEDY:
        return logits > 0
    if mode == SAMPLE:
        return torch.rand(logits.shape, generator=required(generator)) < torch.sigmoid(logits.detach())
    raise ValueError(f"unknown mode {mode!r}")


def gumbel(shape: torch.Size | tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
    """Standard Gumbel noise drawn from `generator` (perturbed scores sorted: a Plackett-Luce sample)."""
    uniform = torch.rand(shape, generator=required(generator)).clamp(1e-9, 1 - 1e-9)
    return -torch.log(-torch.log(uniform))


def bernoulli_log_prob(chosen: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """log p of each flag: log sigmoid(logit) where set, log sigmoid(-logit) where not."""
    return torch.where(chosen, nn.functional.logsigmoid(logits), nn.functional.logsigmoid(-logits))


def categorical_entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """Entropy over the last dimension; excluded items (log p = -inf) add nothing and no NaN (0 * -inf)."""
    return -(log_probs.exp() * log_probs.clamp_min(NEGATIVE)).sum(-1)


def bernoulli_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of each Bernoulli(sigmoid(logit)), element-wise."""
    p = torch.sigmoid(logits)
    return -(p * nn.functional.logsigmoid(logits) + (1 - p) * nn.functional.logsigmoid(-logits))
