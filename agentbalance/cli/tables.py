"""Rich tables and one-line JSON of the CLI's results: what a user reads, never what decides anything.

Ids, answers and errors are data: escaped, never rendered as markup.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.pooling import PoolingResult
from agentbalance.runtime.trace import Trace

if TYPE_CHECKING:
    from agentbalance.budgets import Budget
    from agentbalance.evaluation.measure import Evaluation


def pools_table(result: PoolingResult, catalog: Catalog) -> Table:
    table = Table(
        title=f"{catalog.source}: Perf = mean of {', '.join(result.benchmarks)}",
        caption="TokCost: USD per 100 single-agent queries; Lat: seconds per call (proxies, see README)",
    )
    table.add_column("backbone", no_wrap=True)
    table.add_column("type")
    for column in ("Perf", "TokCost $/100q", "Lat s"):
        table.add_column(column, justify="right")
    table.add_column("kept")
    table.add_column("pool", justify="right")
    table.add_column("dominated by", overflow="fold")
    ordered = result.triples.sort_values(["pool", "tok_cost"], key=lambda col: col.where(col >= 0, 10**9))
    for name, row in ordered.iterrows():
        table.add_row(
            str(name),
            "R" if row.reasoning else "NR",
            f"{row.perf:.1f}",
            f"{row.tok_cost:.4f}",
            f"{row.lat:.1f}",
            "yes" if row.kept else "no",
            str(int(row.pool)) if row.pool >= 0 else "-",
            ", ".join(result.dominated_by.get(str(name), [])),
        )
    return table


def agents_table(trace: Trace) -> Table:
    table = Table(title=f"query {escape(trace.id)}")  # ids, answers and errors are data, never markup
    for column in ("agent", "role", "backbone", "answer", "in tok", "out tok", "USD", "start s", "end s", "note"):
        table.add_column(
            column, justify="right" if column in ("in tok", "out tok", "USD", "start s", "end s") else "left"
        )
    for agent in trace.agents:
        note = agent.error or agent.skipped or ("ran: inputs disagreed" if agent.escalated else "")
        table.add_row(
            escape(agent.id),
            escape(agent.role),
            escape(agent.backbone),
            escape(agent.answer) if agent.answer is not None else "-",
            str(agent.prompt_tokens),
            str(agent.completion_tokens),
            f"{agent.cost_usd:.6f}",
            f"{agent.start_s:.1f}",
            f"{agent.end_s:.1f}",
            escape(note),
        )
    return table


def print_mas(console: Console, mas: MAS, title: str) -> None:
    when = {"always": "", "disagree": " (if inputs disagree)", "never": " (vote)"}
    agents = ", ".join(f"{a.id}={a.role}@{a.backbone}{when[a.when]}" for a in mas.agents)
    edges = ", ".join(f"{a}->{b}" for a, b in mas.edges) or "none"
    console.print(f"{title}: pool {mas.pool}; agents {agents}; edges {edges}; decision {mas.decision}", highlight=False)


def budget_points_table(points: list[dict[str, object]]) -> Table:
    """One row per budget of a budget-conditioned controller's grid: what it achieves on test."""
    table = Table(title="one controller, every budget of its range (test split)")
    for column in ("budget Tok", "budget Lat", "met on val", "Perf", "Tok $/100q", "Lat s"):
        table.add_column(column, justify="right")
    for point in points:
        budget, test = point["budget"], point["test"]
        assert isinstance(budget, dict) and isinstance(test, dict)
        table.add_row(
            f"{budget['tok']:.4g}" if budget["tok"] is not None else "-",
            f"{budget['lat']:.4g}" if budget["lat"] is not None else "-",
            "yes" if point["feasible"] else "no",
            f"{100 * test['perf']:.1f}%",
            f"{test['tok']:.4f}",
            f"{test['lat']:.1f}",
        )
    return table


def print_result_json(result: Evaluation, budget: Budget, feasible: bool, split: str, out: Path) -> None:
    """The one-line JSON of `build --json` and `evaluate --json` (the same keys, by design)."""
    payload = {
        "perf": result.perf,
        "tok": result.tok,
        "lat": result.lat,
        "budget_tok": budget.tok,
        "budget_lat": budget.lat,
        "feasible": feasible,
        "split": split,
        "n": result.n,
        "n_graded": result.n_graded,
        "escalation_rate": result.escalation_rate,
        "out": str(out),
    }
    sys.stdout.write(json.dumps(payload) + "\n")


def evaluation_table(
    title: str, rows: list[tuple[str, Evaluation]], budget_tok: float | None, budget_lat: float | None
) -> Table:
    table = Table(title=title)
    escalating = any(evaluation.escalation_rate > 0 for _, evaluation in rows)
    columns = ["split", "n", "Perf", "Tok $/100q", "Tok upper", "Lat s", "Lat upper", "pools", "agents", "depths"]
    if escalating:  # conditional agents ran somewhere: how often beside Tok, since it is why Tok varies
        columns.insert(5, "escalated")
    for column in columns:
        table.add_column(column, justify="left" if column in ("split", "pools", "agents", "depths") else "right")
    for name, e in rows:
        cells = [
            name,
            str(e.n) if e.n_graded == e.n else f"{e.n} ({e.n_graded} graded)",
            f"{100 * e.perf:.1f}%",
            f"{e.tok:.4f}",
            f"{e.tok_upper:.4f}",
            f"{e.lat:.1f}",
            f"{e.lat_upper:.1f}",
            _short(e.pools),
            _short(e.agent_counts),
            _short(e.depths),
        ]
        if escalating:
            cells.insert(5, f"{100 * e.escalation_rate:.0f}%")
        table.add_row(*cells)
    tok = budget_tok if budget_tok is not None else "-"
    lat = budget_lat if budget_lat is not None else "-"
    table.caption = f"budget: Tok {tok} USD/100 queries, Lat {lat} s/query; upper = one-sided 95% bound"
    return table


def _short(counts: dict[str, int]) -> str:
    return " ".join(f"{key}:{value}" for key, value in counts.items())
