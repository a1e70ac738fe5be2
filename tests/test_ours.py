"""agentbalance as a compared method: its budget sweep covers the whole budget axis of the metrics."""

from __future__ import annotations

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.ours import AgentBalanceMethod
from agentbalance.mas import MAS
from agentbalance.measuring import measure


def test_each_axis_sweep_runs_from_its_cheapest_backbone_alone_to_the_base_mas(small_experiment) -> None:
    """Below its lowest budget a curve would only be the straight line to (0, 0): each axis's sweep must
    reach down to the cheapest point the catalog has on that axis (the cheapest, or the fastest, backbone
    alone), measured on validation like everything else, and its budgets leave the other axis free."""
    val = small_experiment.splits.val
    base = measure(small_experiment, [base_mas(small_experiment)] * len(val), val)
    context = small_experiment.context
    method = AgentBalanceMethod()
    settings = method.settings(small_experiment, 5)
    assert len(settings) == 10
    for axis, costs in (("tok", context.backbone_tok_cost), ("lat", context.backbone_latency_s)):
        cheapest = context.backbone_names[int(costs.argmin())]
        alone = measure(small_experiment, [MAS.single(small_experiment.roles.decision.name, cheapest)] * len(val), val)
        scales = [float(s.removeprefix(f"{axis}:scale=")) for s in settings if s.startswith(f"{axis}:")]
        assert len(scales) == 5 and scales == sorted(scales) and scales[-1] == 1.0
        assert scales[0] * getattr(base, axis) == pytest.approx(getattr(alone, axis), rel=1e-3)
        budget_range = method.budget_range(small_experiment, axis)
        other = "lat" if axis == "tok" else "tok"
        assert getattr(budget_range.loosest, other) is None


def test_a_setting_of_another_method_is_refused_with_its_format(small_experiment) -> None:
    with pytest.raises(AgentBalanceError, match=r"expected tok:scale=NUMBER or lat:scale=NUMBER"):
        AgentBalanceMethod().fit(small_experiment, "scale=0.5")
