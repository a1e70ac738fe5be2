"""Fixed-topology baselines: the whole role library on one backbone, wired as a complete graph, chain,
star, layered graph or two-round debate (`agentbalance.templates`); and the base MAS that fixes the
metrics' budget window.

Nothing here trains or looks at a query: the same graph serves every query, so only the backbone moves
cost. Each graph is built once with full validation (`MAS(...)`); per-query copies reuse that graph.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.templates import TOPOLOGIES, topology_mas


def base_mas(experiment: Experiment) -> MAS:
    """The metrics' base MAS: the complete graph with the catalog's highest-Perf backbone everywhere."""
    return topology_mas("complete", experiment.roles, experiment.strongest_backbone())


def same_mas_for_every_query(mas: MAS) -> Constructor:
    """A constructor that ignores the query: copies of `mas` labelled with each query's id."""

    def construct(queries: Sequence[Query]) -> list[MAS]:
        return [mas.for_query(q.id) for q in queries]

    return construct


class OneBackboneMethod(ABC):
    """A query-independent MAS on one backbone; the sweep runs over the method's `backbones` (by default
    every backbone kept by the Pareto filter), and its frontier is the envelope of those points."""

    name: str
    swept = "a backbone kept by the Pareto filter"  # what a setting is, for the error of an unknown one

    @abstractmethod
    def build(self, roles: RoleSet, backbone: str) -> MAS:
        """The method's MAS over the role library with `backbone` on every agent."""

    def backbones(self, experiment: Experiment) -> list[str]:
        """The backbones swept, one setting each: the Pareto-kept ones, cheapest pool first."""
        return experiment.kept

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        return self.backbones(experiment)

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        known = self.backbones(experiment)
        if setting not in known:
            raise AgentBalanceError(f"{self.name}: setting {setting!r} is not {self.swept}; known: {', '.join(known)}")
        return same_mas_for_every_query(self.build(experiment.roles, setting))


class FixedTopology(OneBackboneMethod):
    """One of the fixed topologies (`complete`, `chain`, `star`, `layered`, `debate`), named after it."""

    def __init__(self, kind: str) -> None:
        if kind not in TOPOLOGIES:
            raise AgentBalanceError(f"unknown topology {kind!r}; known: {', '.join(TOPOLOGIES)}")
        self.name = self.kind = kind

    def build(self, roles: RoleSet, backbone: str) -> MAS:
        return topology_mas(self.kind, roles, backbone)
