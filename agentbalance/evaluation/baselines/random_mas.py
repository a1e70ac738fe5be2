"""The random-MAS baseline: per query, a random subset of roles on random backbones in a random DAG.

Its only knob is the cost tier (which pools backbones may come from); nothing is learned and the
query's text is never read: the draw depends on the seed and the query id only, so a query always
gets the same MAS.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.templates import agent_id

KEEP_PROBABILITY = 0.5  # each non-decision role, and each forward edge


def random_mas(roles: RoleSet, backbones: Sequence[str], seed: int, query_id: str) -> MAS:
    """Keep each non-decision role with probability 1/2, order the kept agents at random with the
    decision agent last, draw each forward edge with probability 1/2, and send every agent left
    without a successor to the decision agent; each agent's backbone is uniform over `backbones`.

    Backbones are drawn last, so the same query gets the same agents and edges at every tier."""
    if not backbones:
        raise AgentBalanceError("a random MAS needs at least one candidate backbone")
    digest = int.from_bytes(hashlib.sha256(query_id.encode()).digest()[:8], "little")
    generator = np.random.default_rng([seed, digest])
    names = roles.names
    decision = names.index(roles.decision.name)
    others = [index for index in range(len(names)) if index != decision]
    kept = [role for role, keep in zip(others, generator.random(len(others)) < KEEP_PROBABILITY, strict=True) if keep]
    order = [*(kept[i] for i in generator.permutation(len(kept))), decision]
    last = len(order) - 1
    draws = generator.random((len(order), len(order))) < KEEP_PROBABILITY
    edges = [(i, j) for i in range(last) for j in range(i + 1, len(order)) if draws[i, j]]
    fed = {i for i, _ in edges}
    edges += [(i, last) for i in range(last) if i not in fed]
    chosen = generator.integers(len(backbones), size=len(order))
    ids = [agent_id((role, 1)) for role in order]
    agents = [Agent(id=ids[k], role=names[role], backbone=backbones[int(chosen[k])]) for k, role in enumerate(order)]
    return MAS.trusted(agents, [(ids[i], ids[j]) for i, j in sorted(edges)], ids[last], order=ids, query_id=query_id)


class RandomMAS:
    """Settings "tier=T": backbones come from the T cheapest pools (tier=1 is the cheapest pool alone)."""

    name = "random"

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        """Every tier when `points` allows; otherwise tiers evenly spaced from 1 to the top tier (the
        top tier, every kept backbone, alone when `points` is 1)."""
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        top = experiment.context.pool_count
        if points == 1:
            return [f"tier={top}"]
        tiers = sorted({round(t) for t in np.linspace(1, top, min(top, points))})
        return [f"tier={t}" for t in tiers]

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        top = experiment.context.pool_count
        try:
            tier = int(setting.removeprefix("tier="))
        except ValueError:
            tier = 0
        if not setting.startswith("tier=") or not 1 <= tier <= top:
            raise AgentBalanceError(f"random: setting {setting!r} is not a cost tier (expected tier=1..tier={top})")
        context = experiment.context
        backbones = [
            name
            for name, pool in zip(context.backbone_names, context.pool_of_backbone.tolist(), strict=True)
            if pool < tier
        ]

        def construct(queries: Sequence[Query]) -> list[MAS]:
            return [random_mas(experiment.roles, backbones, experiment.seed, query.id) for query in queries]

        return construct
