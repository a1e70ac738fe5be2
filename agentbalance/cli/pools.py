"""`agentbalance pools`: the Pareto front of a catalog's backbones and their k-medoids pools.

It only prints and writes what `build_pools` computed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentbalance.catalog import Catalog
from agentbalance.cli.app import reports_user_errors, write_json
from agentbalance.cli.tables import pools_table
from agentbalance.pooling import build_pools


@reports_user_errors
def pools(
    catalog: Annotated[
        Path | None, typer.Option(help="Backbone catalog YAML (default: the shipped pools/qwen3-deepseek.yaml).")
    ] = None,
    k: Annotated[int | None, typer.Option(min=1, help="Number of pools (default 4, capped by survivors).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    benchmarks: Annotated[
        str | None, typer.Option(help="Comma-separated benchmarks Perf averages (default: all shared ones).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON instead of a table.")] = False,
    json_out: Annotated[Path | None, typer.Option(help="Also write the JSON result to this file.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG scatter (log TokCost vs Perf) here.")] = None,
) -> None:
    """Pareto front of the catalog's backbones and their k-medoids pools, cheapest pool first."""
    loaded = Catalog.load(catalog)
    wanted = [b.strip() for b in benchmarks.split(",") if b.strip()] if benchmarks else None
    result = build_pools(loaded, k=k, seed=seed, benchmarks=wanted)
    payload = result.to_json()
    if json_out is not None:
        write_json(json_out, payload)
    if plot is not None:
        from agentbalance.plots import plot_pools

        plot_pools(result, plot, title=Path(loaded.source).name)
    if as_json:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    console = Console()
    console.print(pools_table(result, loaded, console.width))
    for index, (members, medoid) in enumerate(zip(result.pools, result.medoids, strict=True)):
        console.print(f"pool {index} (medoid {medoid}): {', '.join(members)}", highlight=False)
    for path in (json_out, plot):
        if path is not None:
            console.print(f"wrote {path}", highlight=False)
