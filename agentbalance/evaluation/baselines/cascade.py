"""The agreement-cascade baseline in the style of FrugalGPT and the mixture-of-thoughts cascade (`cascade-style`):
two answerers (two backbones, or two samples of one) and the decision role on a third, stronger backbone that
runs only when the two disagree.

Every such cascade over the world's catalog is measured on the validation split; per budget level, the one
with the best validation Perf whose validation cost bound fits is a setting. Nothing reads the test split,
and the same cascade serves every query (the MAS is fixed; what runs depends on the answers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.base import Constructor
from agentbalance.evaluation.baselines.fixed import same_mas_for_every_query
from agentbalance.evaluation.baselines.single import single_mas
from agentbalance.evaluation.measure import Evaluation, measure
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.templates import cascade_backbones, cascade_mas


@dataclass(frozen=True)
class Cascade:
    """One hand-built cascade and how it did on validation."""

    name: str  # "first+second->escalation"
    mas: MAS
    validation: Evaluation


def cascade_name(answerers: tuple[str, str], escalation: str) -> str:
    return f"{answerers[0]}+{answerers[1]}->{escalation}"


def all_cascades(experiment: Experiment) -> list[tuple[str, MAS]]:
    """Every cascade of the catalog whose escalation backbone does better alone on validation than each of
    its answerers (escalating to a weaker backbone is never the classic cascade), in catalog order."""
    names = list(experiment.world.catalog.names)
    val = experiment.splits.val
    alone = {name: measure(experiment, [single_mas(experiment.roles, name)] * len(val), val).perf for name in names}
    return [
        (cascade_name(answerers, escalation), cascade_mas(experiment.roles, answerers, escalation))
        for answerers, escalation in cascade_backbones(names)
        if alone[escalation] > max(alone[a] for a in answerers)
    ]


def validation_frontier(cascades: list[Cascade], levels: int) -> list[Cascade]:
    """At `levels` token budgets log-spaced over the cascades' validation cost bounds, the cascade of the best
    validation Perf that fits (the cheaper on a tie); each cascade once, cheapest budget first."""
    bounds = np.array([c.validation.tok_upper for c in cascades])
    low, high = float(bounds.min()), float(bounds.max())
    if levels == 1:
        budgets = np.array([high])  # one level: the loosest, so the best cascade of all
    else:
        budgets = np.geomspace(low, high, levels) if low > 0 else np.linspace(low, high, levels)
    chosen: dict[str, Cascade] = {}
    for budget in budgets:
        fitting = [c for c in cascades if c.validation.tok_upper <= budget * (1 + 1e-12)]
        best = max(fitting, key=lambda c: (c.validation.perf, -c.validation.tok))
        chosen.setdefault(best.name, best)
    return list(chosen.values())


class CascadeStyle:
    """Settings: the validation-selected cascades (see the module docstring), named "a+b->c"."""

    name = "cascade-style"

    def __init__(self) -> None:
        self._measured: tuple[Experiment, dict[str, Cascade]] | None = None  # the experiment last measured for

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        if points < 1:
            raise AgentBalanceError(f"--points must be at least 1, got {points}")
        return [c.name for c in validation_frontier(list(self.measured(experiment).values()), points)]

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        measured = self.measured(experiment)
        if setting not in measured:
            known = next(iter(measured))
            raise AgentBalanceError(f"{self.name}: {setting!r} is not a cascade of this catalog; known: e.g. {known}")
        return same_mas_for_every_query(measured[setting].mas)

    def measured(self, experiment: Experiment) -> dict[str, Cascade]:
        """Every cascade of the catalog with its validation results, measured once per experiment (a sweep
        asks for its settings, then fits each)."""
        if self._measured is not None and self._measured[0] is experiment:
            return self._measured[1]
        cascades = all_cascades(experiment)
        if not cascades:
            raise AgentBalanceError(
                f"{self.name}: the catalog has no cascade (it needs a backbone stronger alone than two others)"
            )
        val = experiment.splits.val
        measured = {name: Cascade(name, mas, measure(experiment, [mas] * len(val), val)) for name, mas in cascades}
        self._measured = (experiment, measured)
        return measured
