"""The `agentbalance` command line: thin, it parses flags, calls the API, prints tables and writes files.

It must never hold logic the Python API lacks, and never show a user a traceback for their own mistake.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.pooling import PoolingResult, build_pools

app = typer.Typer(
    name="agentbalance",
    help="Cost-effective LLM multi-agent systems under token-cost and latency budgets.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main_options() -> None:
    """Cost-effective LLM multi-agent systems under token-cost and latency budgets.

    Units everywhere: Tok = USD per 100 queries, Lat = seconds per query.
    """


P = ParamSpec("P")
R = TypeVar("R")


def reports_user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Print an AgentBalanceError as one `error:` line on stderr and exit with code 2."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except AgentBalanceError as error:
            Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {error}", markup=False)
            raise typer.Exit(2) from None

    return wrapper


def _write_json(path: Path, payload: object) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise AgentBalanceError(f"cannot write {path}: {error}") from None


def _pools_table(result: PoolingResult, catalog: Catalog) -> Table:
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


@app.command()
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
        _write_json(json_out, payload)
    if plot is not None:
        from agentbalance.plots import plot_pools

        plot_pools(result, plot, title=Path(loaded.source).name)
    if as_json:
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    console = Console()
    console.print(_pools_table(result, loaded))
    for index, (members, medoid) in enumerate(zip(result.pools, result.medoids, strict=True)):
        console.print(f"pool {index} (medoid {medoid}): {', '.join(members)}", highlight=False)
    for path in (json_out, plot):
        if path is not None:
            console.print(f"wrote {path}", highlight=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
