"""The train / val / test questions of a world, fixed by the world and the seed, shared by every command.

Splits never mix: the controller trains on train, budgets are targeted on val, results are reported on test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS, Query
from agentbalance.worlds.base import RecordedWorld, World
from agentbalance.worlds.simulated.questions import generate_synthetic

SPLIT_SEED_OFFSETS = {"train": 1_000, "val": 2_000, "test": 3_000}  # synthetic items of each split never overlap


@dataclass(frozen=True)
class Splits:
    train: list[Query]
    val: list[Query]
    test: list[Query]

    def get(self, name: str) -> list[Query]:
        if name not in ("train", "val", "test"):
            raise AgentBalanceError(f"unknown split {name!r}; use train, val or test")
        return getattr(self, name)


def synthetic_split(name: str, count: int, seed: int, domains: Sequence[str] = DOMAINS) -> list[Query]:
    """`count` synthetic items of one split, the domains interleaved (item i has domain i mod len)."""
    per_domain = {
        d: generate_synthetic(d, -(-count // len(domains)), seed=seed + SPLIT_SEED_OFFSETS[name]) for d in domains
    }
    return [per_domain[domains[i % len(domains)]][i // len(domains)] for i in range(count)]


def world_splits(world: World, sizes: tuple[int, int, int], seed: int, domains: Sequence[str] = DOMAINS) -> Splits:
    """The first N questions of each fixed split: a replay world's own split, or synthetic items."""
    for size in sizes:
        if size < 1:
            raise AgentBalanceError(f"split sizes must be at least 1, got {sizes}")
    if isinstance(world, RecordedWorld):  # its split is a pure function of its questions and the seed
        names = ("train", "val", "test")
        return Splits(*(list(world.queries(name))[:size] for name, size in zip(names, sizes, strict=True)))
    return Splits(
        *(
            synthetic_split(name, size, seed, domains)
            for name, size in zip(("train", "val", "test"), sizes, strict=True)
        )
    )


SPLIT_FRACTIONS = (0.6, 0.2, 0.2)


def task_splits(queries: Sequence[Query], sizes: tuple[int, int, int], seed: int) -> Splits:
    """Split a task's items 60/20/20 by a hash of (seed, id), then take the first N of each split:
    a pure function of the items and the seed, so every command sees the same test questions."""
    import hashlib

    ranked = sorted(queries, key=lambda q: hashlib.sha256(f"{seed}:{q.id}".encode()).hexdigest())
    cut_train = round(len(ranked) * SPLIT_FRACTIONS[0])
    cut_val = cut_train + round(len(ranked) * SPLIT_FRACTIONS[1])
    parts = (ranked[:cut_train], ranked[cut_train:cut_val], ranked[cut_val:])
    splits = Splits(*(list(part[:size]) for part, size in zip(parts, sizes, strict=True)))
    for name in ("train", "val", "test"):
        if not splits.get(name):
            raise AgentBalanceError(f"the task has too few items for a {name} split ({len(queries)} items in all)")
    return splits
