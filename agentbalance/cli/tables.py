"""Rich tables and one-line JSON of the CLI's results: what a user reads, never what decides anything.

Ids, answers and errors are data: escaped, never rendered as markup.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.pooling import PoolingResult
from agentbalance.runtime.trace import AgentTrace, Trace

if TYPE_CHECKING:
    from agentbalance.budgets import Budget
    from agentbalance.measuring import Evaluation


@dataclass(frozen=True)
class Column:
    """One column of a fitted table: its header and cells, and how it behaves when space runs out."""

    header: str
    cells: list[str]
    justify: Literal["left", "right"] = "left"
    priority: int = 0  # 0: always shown; higher numbers are the first to go when the terminal is narrow
    free_text: bool = False  # answers, notes: cut with an ellipsis rather than wrapped a word a line
    least: int = 16  # a free-text column is never cut narrower than this

    @property
    def width(self) -> int:
        return max([len(self.header), *(len(cell) for cell in self.cells)])


CELL_FRAME = 3  # a cell's border and padding in rich's default box


def fitted_table(title: str, columns: list[Column], width: int, caption: str | None = None) -> Table:
    """The columns that fit `width`, in their order: every priority-0 column, then the others by priority
    while they fit; names never wrap and free text is cut with an ellipsis, so an 80-column terminal reads
    one row a line. The caption names any column left out (`--json` has everything)."""
    budget = width - 1

    def space(column: Column) -> int:
        return (min(column.width, column.least) if column.free_text else column.width) + CELL_FRAME

    shown = [c for c in columns if c.priority == 0]
    used = sum(space(c) for c in shown)
    for column in sorted((c for c in columns if c.priority > 0), key=lambda c: c.priority):
        if used + space(column) <= budget:
            shown.append(column)
            used += space(column)
    shown = [c for c in columns if c in shown]
    hidden = [c.header for c in columns if c not in shown]
    fixed = sum(space(c) for c in shown if not c.free_text)
    room = _free_text_widths([c for c in shown if c.free_text], budget - fixed)
    notes = [caption] if caption else []
    if hidden:
        notes.append(f"not shown at this width: {', '.join(hidden)}")
    table = Table(title=title, caption="; ".join(notes) or None)
    for column in shown:
        table.add_column(
            column.header,
            justify=column.justify,
            no_wrap=True,
            overflow="ellipsis" if column.free_text else "fold",
            max_width=room.get(column.header),
        )
    for row in zip(*(c.cells for c in shown), strict=True):
        table.add_row(*row)
    return table


def _free_text_widths(free: list[Column], space: int) -> dict[str, int]:
    """Share `space` among the free-text columns (frames included): the narrow ones get their full width,
    the rest an equal share of what is left, never less than their `least`."""
    widths: dict[str, int] = {}
    for index, column in enumerate(sorted(free, key=lambda c: c.width)):
        share = space // (len(free) - index) - CELL_FRAME
        widths[column.header] = min(column.width, max(column.least, share))
        space -= widths[column.header] + CELL_FRAME
    return widths


def pools_table(result: PoolingResult, catalog: Catalog, width: int) -> Table:
    ordered = result.triples.sort_values(["pool", "tok_cost"], key=lambda col: col.where(col >= 0, 10**9))
    rows = list(ordered.iterrows())

    def dominated_by(name: str) -> str:
        by = result.dominated_by.get(name, []) if name not in result.complements else []
        return f"{by[0]} +{len(by) - 1}" if len(by) > 1 else (by[0] if by else "")

    columns = [
        Column("backbone", [str(name) for name, _ in rows]),
        Column("type", ["R" if row.reasoning else "NR" for _, row in rows], priority=2),
        Column("Perf", [f"{row.perf:.1f}" for _, row in rows], "right"),
        Column("Tok", [f"{row.tok_cost:.4f}" for _, row in rows], "right"),
        Column("Lat s", [f"{row.lat:.1f}" for _, row in rows], "right"),
        Column("pool", [str(int(row.pool)) if row.pool >= 0 else "-" for _, row in rows], "right"),
        Column("dominated by", [dominated_by(str(name)) for name, _ in rows], priority=1, free_text=True),
    ]
    return fitted_table(
        f"{Path(catalog.source).name}: Perf = mean of {', '.join(result.benchmarks)}",
        columns,
        width,
        "Tok: USD per 100 single-agent queries; Lat: seconds per call (proxies); pool -: dropped",
    )


def _agent_note(agent: AgentTrace) -> str:
    """Why an agent failed, did not run, or ran though conditional."""
    return agent.error or agent.skipped or ("ran: inputs disagreed" if agent.escalated else "")


def agents_table(trace: Trace, width: int) -> Table:
    agents = trace.agents
    notes = ["; ".join(filter(None, (_agent_note(agent), agent.context_cut))) for agent in agents]
    columns = [
        Column("agent", [escape(a.id) for a in agents]),  # ids, answers and errors are data, never markup
        Column("role", [escape(a.role) for a in agents], priority=3),
        Column("backbone", [escape(a.backbone) for a in agents]),
        Column("answer", [escape(a.answer) if a.answer is not None else "-" for a in agents], free_text=True, least=12),
        Column("in+out tok", [f"{a.prompt_tokens}+{a.completion_tokens}" for a in agents], "right", priority=4),
        Column("USD", [f"{a.cost_usd:.6f}" for a in agents], "right", priority=2),
        Column("start s", [f"{a.start_s:.1f}" for a in agents], "right", priority=5),
        Column("end s", [f"{a.end_s:.1f}" for a in agents], "right", priority=2),
    ]
    if any(notes):  # failures, skips and escalations are what a reader looks for: never left out
        columns.append(Column("note", [escape(note) for note in notes], free_text=True, least=22))
    return fitted_table(f"query {escape(trace.id)}", columns, width)


def print_mas(console: Console, mas: MAS, title: str) -> None:
    when = {"always": "", "disagree": " (if inputs disagree)", "never": " (vote)"}
    agents = ", ".join(f"{a.id}={a.role}@{a.backbone}{when[a.when]}" for a in mas.agents)
    edges = ", ".join(f"{a}->{b}" for a, b in mas.edges) or "none"
    console.print(f"{title}: pool {mas.pool}; agents {agents}; edges {edges}; decision {mas.decision}", highlight=False)


def budget_points_table(points: list[dict[str, object]], width: int) -> Table:
    """One row per budget of a budget-conditioned controller's grid: what it achieves on test."""
    budgets = [cast(dict[str, Any], point["budget"]) for point in points]
    tests = [cast(dict[str, float], point["test"]) for point in points]
    columns = [
        Column("budget Tok", [f"{b['tok']:.4g}" if b["tok"] is not None else "-" for b in budgets], "right"),
        Column("budget Lat", [f"{b['lat']:.4g}" if b["lat"] is not None else "-" for b in budgets], "right"),
        Column("met on val", ["yes" if point["feasible"] else "no" for point in points], "right"),
        Column("Perf", [f"{100 * t['perf']:.1f}%" for t in tests], "right"),
        Column("Tok", [f"{t['tok']:.4f}" for t in tests], "right"),
        Column("Lat s", [f"{t['lat']:.1f}" for t in tests], "right"),
    ]
    return fitted_table("one controller, every budget of its range (test split)", columns, width)


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
    title: str, rows: list[tuple[str, Evaluation]], budget_tok: float | None, budget_lat: float | None, width: int
) -> Table:
    evaluations = [e for _, e in rows]
    columns = [
        Column("split", [name for name, _ in rows]),
        Column("n", [str(e.n) if e.n_graded == e.n else f"{e.n} ({e.n_graded} graded)" for e in evaluations], "right"),
        Column("Perf", [f"{100 * e.perf:.1f}%" for e in evaluations], "right"),
        Column("Tok", [f"{e.tok:.4f}" for e in evaluations], "right"),
        Column("Tok up", [f"{e.tok_upper:.4f}" for e in evaluations], "right", priority=2),
        Column("Lat s", [f"{e.lat:.1f}" for e in evaluations], "right"),
        Column("Lat up", [f"{e.lat_upper:.1f}" for e in evaluations], "right", priority=2),
    ]
    if any(e.escalation_rate > 0 for e in evaluations):  # conditional agents ran: how often, since it moves Tok
        columns.append(Column("escalated", [f"{100 * e.escalation_rate:.0f}%" for e in evaluations], "right", 1))
    columns += [
        Column("agents", [_short(e.agent_counts) for e in evaluations], priority=3, free_text=True),
        Column("pools", [_short(e.pools) for e in evaluations], priority=4, free_text=True),
        Column("depths", [_short(e.depths) for e in evaluations], priority=5, free_text=True),
    ]
    tok = f"{budget_tok} USD/100 queries" if budget_tok is not None else "free"
    lat = f"{budget_lat} s/query" if budget_lat is not None else "free"
    caption = f"budget: Tok {tok}, Lat {lat}; up = one-sided 95% bound"
    return fitted_table(title, columns, width, caption)


def summary_table(title: str, summary: list[dict[str, object]], width: int) -> Table:
    """A curve's summary (one row per method), in points: the AUCs and gains first, P@ levels as room allows."""
    from agentbalance.evaluation.metrics import in_points

    names = [key for key in (summary[0] if summary else {}) if key != "method"]

    def priority(key: str) -> int:
        if key.startswith("AUC") or key.startswith("gain"):
            return 1
        return 2 if key.startswith("P@T") else 3

    headers = {"gain_log_tok": "gain tok", "gain_log_lat": "gain lat"}
    columns = [Column("method", [str(row["method"]) for row in summary])] + [
        Column(
            headers.get(key, key),
            [f"{in_points(key, float(cast(float, row[key]))):.1f}" for row in summary],
            "right",
            priority(key),
        )
        for key in names
    ]
    return fitted_table(title, columns, width)


def _short(counts: dict[str, int]) -> str:
    return " ".join(f"{key}:{value}" for key, value in counts.items())
