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

from agentbalance.cli.app import (
    AddressOption,
    DataOption,
    ExecutorOption,
    JudgeCatalogOption,
    JudgeOption,
    JudgeRubricOption,
    LimitOption,
    TaskOption,
    live_world_options,
    parse_seeds,
    reports_user_errors,
)
from agentbalance.cli.progress import unit_progress
from agentbalance.cli.tables import summary_table
from agentbalance.errors import AgentBalanceError
from agentbalance.worlds import WORLD_HELP, LiveOptions, judge_spec

if TYPE_CHECKING:
    from agentbalance.evaluation.curve_files import CurveRow


@reports_user_errors
@live_world_options()
def curve(
    methods: Annotated[
        str, typer.Option(help="Methods, comma-separated; groups: all, ablations (docs/curves.md).")
    ] = "all",
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code|mixed.")] = None,
    points: Annotated[int, typer.Option(min=1, help="Settings per method (single, fixed graphs: one a backbone).")] = 8,
    train: Annotated[int, typer.Option(min=1, help="Training questions (first N of the fixed split).")] = 600,
    val: Annotated[int, typer.Option(min=2, help="Validation questions.")] = 200,
    test: Annotated[int, typer.Option(min=2, help="Test questions (every point is measured on them).")] = 400,
    epochs: Annotated[int, typer.Option(min=1, help="Training epochs of agentbalance's controller.")] = 25,
    menu_guard: Annotated[
        bool, typer.Option(help="agentbalance with the menu guard, as `build --menu-guard` (docs/curves.md).")
    ] = False,
    seed: Annotated[int | None, typer.Option(help="Seed of every random choice (default 0).")] = None,
    seeds: Annotated[
        str | None,
        typer.Option(help="Several seeds in one sweep, comma-separated (0,1,2): one folder each, mean/min/max."),
    ] = None,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    judge: JudgeOption = None,
    judge_catalog: JudgeCatalogOption = None,
    judge_rubric: JudgeRubricOption = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default runs/curve-<timestamp>).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    *,
    live: LiveOptions,
) -> None:
    """Performance-budget curves: sweep each method's cost knob, measure on test, P@T / P@L / AUC / gains, plots.

    Rerun the same command after an interruption: finished points are skipped."""
    from datetime import datetime

    from agentbalance.evaluation.curve import Sweep, run_curve
    from agentbalance.evaluation.methods import parse_methods
    from agentbalance.executors import ExecutorSpec
    from agentbalance.experiment import ExperimentSpec
    from agentbalance.train.config import TrainConfig

    names = parse_methods(methods)
    if seeds is not None and seed is not None:
        raise AgentBalanceError("give --seed N (one seed) or --seeds A,B,... (several), not both")
    seed_list = parse_seeds(seeds) if seeds is not None else None
    executor_spec = ExecutorSpec(executor, address)
    spec = ExperimentSpec(
        world=world_spec,
        catalog=str(catalog) if catalog else None,
        roles=roles,
        sizes=(train, val, test),
        task=task,
        data=str(data) if data else None,
        limit=limit,
        live=live,
        judge=judge_spec(judge, judge_catalog, judge_rubric),
        seed=seed or 0,
    )
    folder = out or Path("runs") / datetime.now().strftime("curve-%Y%m%d-%H%M%S")
    console = Console(stderr=as_json)

    def on_point(point_seed: int, row: CurveRow, resumed: bool) -> None:
        prefix = f"seed {point_seed}: " if seed_list is not None else ""
        progress.console.print(
            f"{prefix}{'resumed' if resumed else 'measured'} {row.method} {row.setting}: Perf {100 * row.perf:.1f}% "
            f"Tok {row.tok:.4f} Lat {row.lat:.1f}s",
            highlight=False,
        )

    def on_stage(text: str) -> None:
        progress.console.print(text, highlight=False)

    sweep = Sweep(spec, TrainConfig(epochs=epochs, menu_guard=menu_guard), tuple(names), points)
    with unit_progress(console, "units (a method on a seed)") as (progress, on_unit):
        result = run_curve(sweep, folder, seed_list, executor_spec, on_point, on_stage, on_unit)
    if as_json:
        sys.stdout.write(json.dumps({"summary": result.summary, "out": str(folder)}) + "\n")
        return
    means = [{k: v for k, v in row.items() if k != "seed"} for row in result.summary if row.get("seed") == "mean"]
    shown = result.summary if seed_list is None else means
    about = "" if seed_list is None else f", mean of {len(seed_list)} seeds"
    table = summary_table(f"{world_spec}: P@, AUC, gains in points (test{about})", shown, console.width)
    console.print(table)
    measured_on = {row.n for rows in result.rows.values() for row in rows}
    if measured_on and max(measured_on) < test:  # a small world: its test split holds fewer questions than asked
        console.print(
            f"note: the world's test split holds fewer questions than asked: every point is measured on "
            f"{max(measured_on)} (asked {test})",
            highlight=False,
        )
    if spec.judge is not None:
        console.print(
            f"judge: USD {result.judge_paid_usd:.4f} paid now for grading the answers (apart from every Tok; calls "
            "served from the response cache are free)",
            highlight=False,
        )
    files = "curve.csv, summary.csv, curve-tok.png, curve-lat.png" if seed_list is None else "summary.csv, seed-*/"
    console.print(
        f"wrote {folder} ({files}, timings.csv) in {result.seconds:.0f} s {result.executor}"
        + (f"; {result.skipped} points resumed" if result.skipped else ""),
        highlight=False,
    )
