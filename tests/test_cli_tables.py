"""Every table the CLI prints reads at 80 columns: no line is wider, names are never cut or wrapped, and a
column that does not fit is named in the caption instead of squeezing the others a word a line."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from agentbalance.catalog import Catalog
from agentbalance.cli.tables import (
    agents_table,
    budget_points_table,
    evaluation_table,
    pools_table,
    summary_table,
)
from agentbalance.mas import MAS, Agent
from agentbalance.measuring import measure
from agentbalance.pooling import build_pools
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.shipped import shipped_dir
from agentbalance.worlds import open_world

WIDTHS = (80, 200)


def rendered(table: Table, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(table)
    return console.export_text().splitlines()


def assert_fits(lines: list[str], width: int, whole: list[str]) -> None:
    assert max(len(line) for line in lines) <= width
    for text in whole:
        assert any(text in line for line in lines), f"{text!r} is cut or wrapped"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_pools_table_keeps_every_backbone_name_whole(width: int) -> None:
    catalog = Catalog.load(shipped_dir("pools") / "qwen3-deepseek-extra.yaml")
    lines = rendered(pools_table(build_pools(catalog), catalog, width), width)
    assert_fits(lines, width, list(catalog.names))
    text = " ".join(lines)
    for header in ("type", "dominated by"):  # shown, or named as left out
        assert header in text


@pytest.mark.parametrize("width", WIDTHS)
def test_the_agents_table_of_a_cascade_keeps_ids_backbones_and_notes_whole(width: int) -> None:
    roles = RoleSet.load("mixed")
    mas = MAS(
        [
            Agent(id="solver-one", role="Step-by-step Calculator", backbone="qwen3-1.7b"),
            Agent(id="solver-two", role="Mathematician", backbone="qwen3-8b"),
            Agent(id="decider", role="Decision Maker", backbone="qwen3-235b-a22b-think", when="disagree"),
        ],
        [("solver-one", "decider"), ("solver-two", "decider")],
        "decider",
    )
    traces = Runner(open_world("sim"), roles).run_sync(
        [(mas, Query(id=f"q{i}", question=f"{i} + {i}?")) for i in range(30)]
    )
    notes = {
        agent.skipped or ("ran: inputs disagreed" if agent.escalated else "") for t in traces for agent in t.agents
    }
    assert "inputs agreed" in notes and "ran: inputs disagreed" in notes, "thirty queries show both"
    for trace in traces:
        lines = rendered(agents_table(trace, width), width)
        note = "inputs agreed" if not trace.escalated else "ran: inputs disagreed"
        assert_fits(lines, width, ["solver-one", "qwen3-235b-a22b-think", note])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_evaluation_budget_and_summary_tables_fit(small_experiment, width: int) -> None:
    val = small_experiment.splits.val
    name = small_experiment.kept[-1]
    evaluation = measure(small_experiment, [MAS.single(small_experiment.roles.decision.name, name)] * len(val), val)
    lines = rendered(evaluation_table("what the controller achieves", [("val", evaluation)], 0.5, 60.0, width), width)
    assert_fits(lines, width, ["val", f"{100 * evaluation.perf:.1f}%", f"{evaluation.tok:.4f}"])
    points = [
        {"budget": {"tok": 0.0123 * k, "lat": None}, "feasible": k > 1, "test": {"perf": 0.8, "tok": 0.01, "lat": 2.0}}
        for k in range(1, 4)
    ]
    assert_fits(rendered(budget_points_table(points, width), width), width, ["0.0369", "80.0%"])
    keys = [f"P@T{i}" for i in range(1, 5)] + ["AUC_tok"] + [f"P@L{i}" for i in range(1, 5)]
    summary = [
        {"method": method, **dict.fromkeys(keys, 0.8125), "AUC_lat": 0.7, "gain_log_tok": 1.5, "gain_log_lat": -0.25}
        for method in ("agentbalance", "agentbalance-random-selection", "self-consistency")
    ]
    lines = rendered(summary_table("sim: P@, AUC, gains in points (test)", summary, width), width)
    assert_fits(lines, width, ["agentbalance-random-selection", "AUC_tok", "gain tok"])
