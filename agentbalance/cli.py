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
from agentbalance.mas import MAS
from agentbalance.pooling import PoolingResult, build_pools
from agentbalance.query import Query, read_queries
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Caps, Runner
from agentbalance.runtime.trace import Trace
from agentbalance.worlds import WORLD_HELP, open_world
from agentbalance.worlds.base import World

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


def _roles_for(mas: MAS, roles: str | None, world: World) -> RoleSet:
    """The role library in use: the one named, else the world's default, else the shipped library
    that holds every role the MAS uses."""
    if roles is not None:
        return RoleSet.load(roles)
    default = getattr(world, "default_roles", None)
    if default is not None:
        return RoleSet.load(default)
    wanted = {agent.role for agent in mas.agents}
    for domain in ("general", "math", "code"):
        library = RoleSet.load(domain)
        if wanted <= set(library.names):
            return library
    raise AgentBalanceError(
        f"no shipped role library holds all of the MAS's roles ({', '.join(sorted(wanted))}); pass --roles PATH"
    )


def _queries_for(question: str | None, input_path: Path | None, world: World) -> list[Query]:
    if (question is None) == (input_path is None):
        raise AgentBalanceError("give either a QUERY text or --input FILE.jsonl (exactly one)")
    resolve = getattr(world, "resolve_query", None)  # replay worlds look queries up by id
    if input_path is not None:
        queries = read_queries(input_path, question_optional=resolve is not None)
    else:
        queries = [Query(id="q1", question=question or "")]
    return [resolve(query) for query in queries] if resolve is not None else queries


def _agents_table(trace: Trace) -> Table:
    table = Table(title=f"query {trace.id}")
    for column in ("agent", "role", "backbone", "answer", "in tok", "out tok", "USD", "start s", "end s", "note"):
        table.add_column(
            column, justify="right" if column in ("in tok", "out tok", "USD", "start s", "end s") else "left"
        )
    for agent in trace.agents:
        note = agent.error or agent.skipped or ""
        table.add_row(
            agent.id,
            agent.role,
            agent.backbone,
            agent.answer if agent.answer is not None else "-",
            str(agent.prompt_tokens),
            str(agent.completion_tokens),
            f"{agent.cost_usd:.6f}",
            f"{agent.start_s:.1f}",
            f"{agent.end_s:.1f}",
            note,
        )
    return table


@app.command()
@reports_user_errors
def run(
    question: Annotated[str | None, typer.Argument(help="The query text (or use --input).")] = None,
    mas_path: Annotated[Path, typer.Option("--mas", help="The MAS to run, as JSON (see README).")] = ...,  # type: ignore[assignment]
    input_path: Annotated[Path | None, typer.Option("--input", help="JSONL queries, one object a line.")] = None,
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, help="LLM calls in flight at once.")] = 32,
    max_usd: Annotated[float | None, typer.Option(help="Hard per-query USD cap (> 0).")] = None,
    max_seconds: Annotated[float | None, typer.Option(help="Hard per-query seconds cap (> 0).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query, a line each (JSONL).")] = False,
) -> None:
    """Execute a MAS on one query or a JSONL file of queries; print answer, cost, latency per agent."""
    caps = Caps(max_usd, max_seconds)
    loaded_catalog = Catalog.load(catalog) if catalog is not None else None
    world = open_world(world_spec, loaded_catalog, seed=seed)
    mas = MAS.load(mas_path)
    library = _roles_for(mas, roles, world)
    mas.check_against(world.catalog, library, source=str(mas_path))
    queries = _queries_for(question, input_path, world)
    runner = Runner(world, library, concurrency=concurrency, caps=caps)
    traces = runner.run_sync([(mas, query) for query in queries])
    if as_json:
        for trace in traces:
            sys.stdout.write(json.dumps(trace.to_json()) + "\n")
        return
    console = Console()
    if world.simulated:
        console.print("world: simulated (a calibrated simulator, not real LLM calls)", highlight=False)
    else:
        console.print(f"world: {world.name}", highlight=False)
    for trace in traces:
        console.print(_agents_table(trace))
        verdict = {True: "correct", False: "wrong", None: "gold unknown"}[trace.correct]
        console.print(
            f"answer: {trace.answer} ({verdict})  cost: ${trace.cost_usd:.6f}  "
            f"latency: {trace.latency_s:.1f} s (modelled critical path)  wall: {trace.wall_s:.3f} s"
            + (f"  failures: {trace.failures}" if trace.failures else "")
            + (f"  capped: {trace.capped}" if trace.capped else ""),
            highlight=False,
        )
    if len(traces) > 1:
        known = [t.correct for t in traces if t.correct is not None]
        accuracy = f"{100 * sum(known) / len(known):.1f}%" if known else "n/a"
        tok = 100 * sum(t.cost_usd for t in traces) / len(traces)
        lat = sum(t.latency_s for t in traces) / len(traces)
        console.print(
            f"{len(traces)} queries: accuracy {accuracy}, Tok ${tok:.4f} per 100 queries, Lat {lat:.1f} s per query",
            highlight=False,
        )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
