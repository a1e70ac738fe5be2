"""The self-consistency baseline (Wang et al., 2023): k answers from one backbone and their majority.

The k answerers read k distinct samples in a multi-sample replay world and k fresh calls in a live one
(the sample index is part of each request); elsewhere they differ only by their roles, so in a world of
one recorded answer per backbone the vote gains nothing and costs k calls. The vote itself makes no call
(`when="never"`). Settings: every backbone of the catalog with k in {3, 5}; the frontier is their envelope,
as for `single`.
"""

from __future__ import annotations

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.evaluation.baselines.fixed import same_mas_for_every_query
from agentbalance.experiment import Experiment
from agentbalance.templates import VOTE_SAMPLES, vote_mas


class SelfConsistency:
    """Settings "backbone x k"."""

    name = "self-consistency"

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        return [f"{backbone} x{k}" for backbone in experiment.world.catalog.names for k in VOTE_SAMPLES]

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        if setting not in self.settings(experiment, 1):
            raise AgentBalanceError(
                f"{self.name}: unknown setting {setting!r} (expected 'BACKBONE xK', K in {VOTE_SAMPLES})"
            )
        backbone, samples = setting.rsplit(" x", 1)
        return same_mas_for_every_query(vote_mas(experiment.roles, backbone, int(samples)))
