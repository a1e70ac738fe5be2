"""The single-LLM baseline: the decision agent alone, once per backbone of the world's catalog.

No training and no query is read; the envelope of its points over every backbone (not only the Pareto-kept
ones) is the single-LLM frontier, as in the paper, and the reference of the gain metrics (metrics.py rule 5).
"""

from __future__ import annotations

from agentbalance.evaluation.baselines.fixed import OneBackboneMethod
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet
from agentbalance.templates import single_mas


class SingleLLM(OneBackboneMethod):
    """Settings are every backbone of the catalog; `fit` returns the decision agent alone on that backbone."""

    name = "single"
    swept = "a backbone of the world's catalog"

    def backbones(self, experiment: Experiment) -> list[str]:
        """Every backbone the world answers with, Pareto-kept or not, in catalog order."""
        return experiment.world.catalog.names

    def build(self, roles: RoleSet, backbone: str) -> MAS:
        return single_mas(roles, backbone)
