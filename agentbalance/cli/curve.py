"""`agentbalance curve`: performance-budget curves of several methods, resumable, as CSV, PNG and a table.

The sweep itself is `agentbalance.evaluation.curve.run_curve`; this module parses and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentbalance.cli.app import DataOption, LimitOption, TaskOption, reports_user_errors
from agentbalance.cli.tables import summary_table
from agentbalance.worlds import WORLD_HELP

if TYPE_CHECKING:
    from agentbalance.evaluation.curve import CurveRow


@reports_user_errors
def curve(
    methods: Annotated[str, typer.Option(help="Comma-separated methods, or 'all' (see README).")] = "all",
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code|mixed.")] = None,
    points: Annotated[int, typer.Option(min=1, help="Settings per method (single, fixed graphs: one a backbone).")] = 8,
    train: Annotated[int, typer.Option(min=1, help="Training questions (first N of the fixed split).")] = 600,
    val: Annotated[int, typer.Option(min=2, help="Validation questions.")] = 200,
    test: Annotated[int, typer.Option(min=2, help="Test questions (every point is measured on them).")] = 400,
    epochs: Annotated[int, typer.Option(min=1, help="Training epochs of agentbalance's controller.")] = 25,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default runs/curve-<timestamp>).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Performance-budget curves: sweep each method's cost knob, measure on test, P@T / P@L / AUC / gains, plots.

    Rerun the same command after an interruption: finished points are skipped."""
    from datetime import datetime

    from agentbalance.evaluation.curve import run_curve
    from agentbalance.evaluation.methods import parse_methods
    from agentbalance.experiment import ExperimentSpec
    from agentbalance.train.config import TrainConfig

    names = parse_methods(methods)
    spec = ExperimentSpec(
        world=world_spec,
        catalog=str(catalog) if catalog else None,
        roles=roles,
        sizes=(train, val, test),
        task=task,
        data=str(data) if data else None,
        limit=limit,
        seed=seed,
    )
    folder = out or Path("runs") / datetime.now().strftime("curve-%Y%m%d-%H%M%S")
    console = Console(stderr=as_json)

    def on_point(row: CurveRow, resumed: bool) -> None:
        console.print(
            f"{'resumed' if resumed else 'measured'} {row.method} {row.setting}: Perf {100 * row.perf:.1f}% "
            f"Tok {row.tok:.4f} Lat {row.lat:.1f}s",
            highlight=False,
        )

    def on_stage(text: str) -> None:
        console.print(text, highlight=False)

    result = run_curve(spec, TrainConfig(epochs=epochs), names, points, folder, on_point, on_stage)
    if as_json:
        sys.stdout.write(json.dumps({"summary": result.summary, "out": str(folder)}) + "\n")
        return
    table = summary_table(f"{world_spec}: P@, AUC, gains in points (test)", result.summary, console.width)
    console.print(table)
    console.print(
        f"wrote {folder} (curve.csv, summary.csv, curve-tok.png, curve-lat.png) in {result.seconds:.0f} s"
        + (f"; {result.skipped} points resumed" if result.skipped else ""),
        highlight=False,
    )
