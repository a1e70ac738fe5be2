"""agentbalance as a compared method: its budget sweep covers the whole budget axis of the metrics."""

from __future__ import annotations

from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.measure import measure
from agentbalance.evaluation.ours import AgentBalanceMethod
from agentbalance.mas import MAS


def test_the_sweep_runs_from_the_cheapest_backbone_alone_to_the_base_mas(small_experiment) -> None:
    """Below its lowest budget the curve would only be the straight line to (0, 0): the sweep must reach
    down to the cheapest point the catalog has, measured on validation like everything else."""
    val = small_experiment.splits.val
    base = measure(small_experiment, [base_mas(small_experiment)] * len(val), val)
    context = small_experiment.context
    cheapest = context.backbone_names[int(context.backbone_tok_cost.argmin())]
    alone = measure(small_experiment, [MAS.single(small_experiment.roles.decision.name, cheapest)] * len(val), val)
    settings = AgentBalanceMethod().settings(small_experiment, 5)
    scales = [float(setting.removeprefix("scale=")) for setting in settings]
    assert scales == sorted(scales) and scales[-1] == 1.0
    lowest = scales[0]
    assert lowest <= 1 / 16, "below the metrics' lowest budget point B_max / 8"
    assert lowest * base.tok <= alone.tok * 1.001 or lowest * base.lat <= alone.lat * 1.001
