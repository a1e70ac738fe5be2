"""Budgets: the grid a budget-conditioned controller trains on, and how a user's budget is served."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.errors import AgentBalanceError
from agentbalance.policy.budget_input import conditions
from agentbalance.trained import TrainedController
from tests.test_cli_build import SMALL, agentbalance, one_error_line


def test_the_grid_runs_from_the_tightest_to_the_users_budget() -> None:
    grid = BudgetRange(Budget(0.8, 40.0), ratio=8, steps=4).budgets()
    assert [round(b.tok, 6) for b in grid] == [0.1, 0.2, 0.4, 0.8]
    assert [round(b.lat, 6) for b in grid] == [5.0, 10.0, 20.0, 40.0]


def test_a_budget_is_served_by_the_scale_of_its_tightest_axis() -> None:
    served_range = BudgetRange(Budget(0.8, 40.0), ratio=8, steps=4, deltas=(-0.3, -0.2, -0.1, 0.0))
    budget, delta = served_range.serve(Budget(0.4, 40.0))  # Tok at half, Lat at full: half wins
    assert budget == Budget(0.4, 20.0) and delta == pytest.approx(-0.1)
    budget, delta = served_range.serve(Budget(tok=0.4 * math.sqrt(2)))  # between grid points: log interpolation
    assert delta == pytest.approx(-0.05)
    assert served_range.serve(Budget(5.0, 500.0)) == (Budget(0.8, 40.0), 0.0)  # looser than trained: the loosest
    assert served_range.serve(None) == (Budget(0.8, 40.0), 0.0)


def test_budgets_outside_what_was_trained_are_refused_clearly() -> None:
    served_range = BudgetRange(Budget(tok=0.8), ratio=8, steps=4, deltas=(0.0,) * 4)
    with pytest.raises(AgentBalanceError, match="tighter than this controller was trained for"):
        served_range.serve(Budget(tok=0.05))
    with pytest.raises(
        AgentBalanceError, match="trained without a Lat budget, so it cannot target one; give a Tok budget only"
    ):
        served_range.serve(Budget(lat=10.0))
    with pytest.raises(AgentBalanceError, match="needs a budget"):
        BudgetRange(Budget())
    with pytest.raises(AgentBalanceError, match="above 1"):
        BudgetRange(Budget(tok=1.0), ratio=1.0)


def test_a_single_budget_model_refuses_another_budget() -> None:
    controller = TrainedController(None, None, Budget(0.5, 60.0), encoder=object())  # type: ignore[arg-type]
    assert controller.serving(None) == (Budget(0.5, 60.0), None)
    with pytest.raises(AgentBalanceError, match="--budget-conditioned"):
        controller.serving(Budget(0.2, 60.0))


def test_a_saved_range_round_trips() -> None:
    saved = BudgetRange(Budget(0.8, None), ratio=4, steps=3, deltas=(0.1, 0.2, 0.3))
    assert BudgetRange.from_json(json.loads(json.dumps(saved.to_json()))) == saved


def test_conditions_are_log_budgets_and_zero_when_absent() -> None:
    rows = conditions([Budget(1.0, None), Budget(math.e, math.e**4)])
    assert rows.tolist() == [[0.0, 0.0], [pytest.approx(1.0), pytest.approx(1.0)]]


@pytest.mark.slow
def test_one_conditioned_build_serves_every_budget_of_its_range(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    done = agentbalance(
        "build", "--budget-tok", "0.8", "--budget-conditioned", "--budget-steps", "3", *SMALL,
        "--out", str(folder), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = json.loads((folder / "config.json").read_text())
    assert len(config["budget_range"]["deltas"]) == 3
    metrics = json.loads((folder / "metrics.json").read_text())
    assert [point["budget"]["tok"] for point in metrics["budget_points"]] == pytest.approx([0.1, 0.8 / 8**0.5, 0.8])
    for tok in ("0.8", "0.2"):
        done = agentbalance("evaluate", "--model", str(folder), "--budget-tok", tok, "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["budget_tok"] == float(tok)
    done = agentbalance("run", "--model", str(folder), "--budget-tok", "0.2", "What is 7 * 6?", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    one_error_line(
        agentbalance("evaluate", "--model", str(folder), "--budget-tok", "0.01", cwd=tmp_path), "tighter than"
    )


def test_each_axis_can_span_its_own_ratio() -> None:
    """Tok 1000x and Lat 10x: the grid's ends are (B_tok/1000, B_lat/10) and (B_tok, B_lat), and a budget
    is served by the scale of its tightest axis on that axis's own span."""
    budget_range = BudgetRange(Budget(10.0, 100.0), ratio=1000, steps=4, deltas=(0.0,) * 4, exponents=(1.0, 1 / 3))
    tightest, *_, loosest = budget_range.budgets()
    assert tightest.tok == pytest.approx(0.01) and tightest.lat == pytest.approx(10.0)
    assert loosest == Budget(10.0, 100.0)
    assert budget_range.scale_of(Budget(lat=10.0)) == pytest.approx(1e-3)
    assert budget_range.scale_of(Budget(tok=1.0, lat=100.0)) == pytest.approx(0.1)
    served, _ = budget_range.serve(Budget(tok=1.0))
    assert served.tok == pytest.approx(1.0) and served.lat == pytest.approx(100.0 * 0.1 ** (1 / 3))
    assert BudgetRange.from_json(json.loads(json.dumps(budget_range.to_json()))) == budget_range


def test_a_range_saved_before_exponents_existed_loads_with_both_axes_together() -> None:
    document = {"loosest": {"tok": 0.8, "lat": 40.0}, "ratio": 8, "steps": 4, "deltas": [0.0] * 4}
    assert BudgetRange.from_json(document).exponents == (1.0, 1.0)
