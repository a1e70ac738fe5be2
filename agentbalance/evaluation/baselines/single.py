"""The single-LLM baseline: the decision agent alone, once per backbone kept by the Pareto filter.

No training and no query is read; the envelope of its points over the kept backbones is the method's
frontier, as in the paper.
"""

from __future__ import annotations

from agentbalance.evaluation.baselines.fixed import OneBackboneMethod
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet
from agentbalance.templates import agent_id


def single_mas(roles: RoleSet, backbone: str) -> MAS:
    """The decision role answering alone on `backbone`."""
    index = roles.names.index(roles.decision.name)
    return MAS.single(roles.decision.name, backbone, agent_id((index, 1)))


class SingleLLM(OneBackboneMethod):
    """Settings are the kept backbones; `fit` returns the decision agent alone on that backbone."""

    name = "single"

    def build(self, roles: RoleSet, backbone: str) -> MAS:
        return single_mas(roles, backbone)
