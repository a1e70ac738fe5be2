"""The `agentbalance` command line: thin, it parses flags, calls the API, prints tables and writes files.

It must never hold logic the Python API lacks, and never show a user a traceback for their own mistake.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.pooling import PoolingResult, build_pools
from agentbalance.query import Query, read_queries
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Caps, Runner
from agentbalance.runtime.trace import Trace
from agentbalance.tasks.base import Task
from agentbalance.worlds import WORLD_HELP, LiveOptions, open_task, open_world
from agentbalance.worlds.base import World

if TYPE_CHECKING:
    from agentbalance.evaluation.curve import CurveRow
    from agentbalance.train.budgets import Budget
    from agentbalance.train.reinforce import Evaluation

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


TaskOption = Annotated[str | None, typer.Option(help="Take the queries from a task (mmlu, math, ...), scored by it.")]
DataOption = Annotated[Path | None, typer.Option(help="The task's local data file or folder.")]
LimitOption = Annotated[int | None, typer.Option(help="The first N items of the task.")]
BaseUrlOption = Annotated[str | None, typer.Option(help="Live world endpoint (else $AGENTBALANCE_BASE_URL).")]
CacheDirOption = Annotated[Path | None, typer.Option(help="Live world response cache folder.")]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Live world: do not read or write the cache.")]
TimeoutOption = Annotated[float, typer.Option(help="Live world: seconds per call before it is retried.")]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="LLM calls in flight at once.")]
ApiKeyFileOption = Annotated[
    Path | None,
    typer.Option("--api-key-file", help="Live world: a file holding only the API key (else $AGENTBALANCE_API_KEY)."),
]
ServeBudgetTokOption = Annotated[
    float | None, typer.Option("--budget-tok", help="A --budget-conditioned model: serve this Tok budget.")
]
ServeBudgetLatOption = Annotated[
    float | None, typer.Option("--budget-lat", help="A --budget-conditioned model: serve this Lat budget.")
]

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


def _load_task(
    name: str | None, data: Path | None, limit: int | None, seed: int, question: str | None, input_path: Path | None
) -> Task | None:
    """The task named by --task (its loader and scorer), checked against the other ways to give queries."""
    if name is None:
        if data is not None or limit is not None:
            raise AgentBalanceError("--data and --limit need --task NAME")
        return None
    if question is not None or input_path is not None:
        raise AgentBalanceError("give queries one way: a QUERY text, --input FILE.jsonl, or --task NAME")
    return open_task(name, data, limit, seed)


def _queries_for(question: str | None, input_path: Path | None, world: World, task: Task | None = None) -> list[Query]:
    if task is not None:
        return list(task.items())
    if (question is None) == (input_path is None):
        raise AgentBalanceError("give either a QUERY text or --input FILE.jsonl (exactly one)")
    resolve = getattr(world, "resolve_query", None)  # replay worlds look queries up by id
    if input_path is not None:
        queries = read_queries(input_path, question_optional=resolve is not None)
    else:
        queries = [Query(id="q1", question=question or "")]
    return [resolve(query) for query in queries] if resolve is not None else queries


def _agents_table(trace: Trace) -> Table:
    table = Table(title=f"query {escape(trace.id)}")  # ids, answers and errors are data, never markup
    for column in ("agent", "role", "backbone", "answer", "in tok", "out tok", "USD", "start s", "end s", "note"):
        table.add_column(
            column, justify="right" if column in ("in tok", "out tok", "USD", "start s", "end s") else "left"
        )
    for agent in trace.agents:
        note = agent.error or agent.skipped or ""
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


@app.command()
@reports_user_errors
def run(
    question: Annotated[str | None, typer.Argument(help="The query text (or use --input).")] = None,
    mas_path: Annotated[Path | None, typer.Option("--mas", help="A MAS to run, as JSON (see README).")] = None,
    model: Annotated[Path | None, typer.Option(help="A run folder of `build`: construct the MAS per query.")] = None,
    input_path: Annotated[Path | None, typer.Option("--input", help="JSONL queries, one object a line.")] = None,
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    concurrency: ConcurrencyOption = 32,
    api_key_file: ApiKeyFileOption = None,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    base_url: BaseUrlOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    timeout: TimeoutOption = 60.0,
    max_usd: Annotated[float | None, typer.Option(help="Hard per-query USD cap (> 0).")] = None,
    max_seconds: Annotated[float | None, typer.Option(help="Hard per-query seconds cap (> 0).")] = None,
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query, a line each (JSONL).")] = False,
) -> None:
    """Execute a MAS on one query or a JSONL file of queries; print answer, cost, latency per agent."""
    caps = Caps(max_usd, max_seconds)
    if (mas_path is None) == (model is None):
        raise AgentBalanceError("give either --mas FILE.json or --model RUN_FOLDER (exactly one)")
    loaded_catalog = Catalog.load(catalog) if catalog is not None else None
    loaded_task = _load_task(task, data, limit, seed, question, input_path)
    live = LiveOptions(
        base_url,
        cache_dir,
        not no_cache,
        timeout,
        concurrency,
        loaded_task.parse if loaded_task else None,
        api_key_file=api_key_file,
    )
    world = open_world(world_spec, loaded_catalog, seed=seed, live=live)
    from agentbalance.train.build import task_roles

    default_roles = roles or (task_roles(loaded_task) if loaded_task else None)
    if model is not None:
        queries = _queries_for(question, input_path, world, loaded_task)
        library, plans = _controller_plans(model, world, default_roles, queries, _serve_budget(budget_tok, budget_lat))
    else:
        assert mas_path is not None
        if budget_tok is not None or budget_lat is not None:
            raise AgentBalanceError("--budget-tok/--budget-lat choose the budget of a --model; a --mas is fixed")
        mas = MAS.load(mas_path)  # checked before anything else is read: a bad MAS is the first error
        library = _roles_for(mas, default_roles, world)
        mas.check_against(world.catalog, library, source=str(mas_path))
        queries = _queries_for(question, input_path, world, loaded_task)
        plans = [mas] * len(queries)
    grader = (lambda query, answer: loaded_task.score(query, answer)) if loaded_task else None
    runner = Runner(world, library, concurrency=concurrency, caps=caps, grader=grader)
    traces = runner.run_sync(list(zip(plans, queries, strict=True)))
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
            f"answer: {escape(str(trace.answer))} ({verdict})  cost: ${trace.cost_usd:.6f}  "
            f"latency: {trace.latency_s:.1f} s (modelled critical path)  wall: {trace.wall_s:.3f} s"
            + (f"  failures: {trace.failures}" if trace.failures else "")
            + (f"  capped: {escape(trace.capped)}" if trace.capped else ""),
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


def _serve_budget(tok: float | None, lat: float | None) -> Budget | None:
    """The budget a user asks a budget-conditioned model for (None: the one it was built for)."""
    from agentbalance.train.budgets import Budget

    return Budget(tok, lat) if tok is not None or lat is not None else None


def _controller_plans(
    model: Path, world: World, roles: str | None, queries: list[Query], budget: Budget | None
) -> tuple[RoleSet, list[MAS]]:
    """Load a trained controller over the world's catalog and construct one MAS per query."""
    from agentbalance.policy.context import ControllerCatalogs
    from agentbalance.train.budgets import budget_condition
    from agentbalance.train.build import load_controller, run_roles, serving_budget

    library = RoleSet.load(roles) if roles is not None else None
    controller, config = load_controller(model, ControllerCatalogs.of_world(world), library)

    library = library or run_roles(model, config)
    served, delta = serving_budget(config, budget)
    import torch

    from agentbalance.encoders import TextEncoder

    embeddings = torch.from_numpy(TextEncoder().encode([q.render() for q in queries]).copy())
    condition = budget_condition(served, len(queries))
    return library, controller.construct(embeddings, condition, [q.id for q in queries], delta=delta)


def _print_mas(console: Console, mas: MAS, title: str) -> None:
    agents = ", ".join(f"{a.id}={a.role}@{a.backbone}" for a in mas.agents)
    edges = ", ".join(f"{a}->{b}" for a, b in mas.edges) or "none"
    console.print(f"{title}: pool {mas.pool}; agents {agents}; edges {edges}; decision {mas.decision}", highlight=False)


def _budget_points_table(points: list[dict[str, object]]) -> Table:
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


def _print_result_json(result: Evaluation, budget: Budget, feasible: bool, split: str, out: Path) -> None:
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
        "out": str(out),
    }
    sys.stdout.write(json.dumps(payload) + "\n")


def _evaluation_table(
    title: str, rows: list[tuple[str, object]], budget_tok: float | None, budget_lat: float | None
) -> Table:
    table = Table(title=title)
    for column in ("split", "n", "Perf", "Tok $/100q", "Tok upper", "Lat s", "Lat upper", "pools", "agents", "depths"):
        table.add_column(column, justify="left" if column in ("split", "pools", "agents", "depths") else "right")
    for name, evaluation in rows:
        e = evaluation  # an Evaluation
        table.add_row(
            name,
            str(e.n),
            f"{100 * e.perf:.1f}%",
            f"{e.tok:.4f}",
            f"{e.tok_upper:.4f}",
            f"{e.lat:.1f}",  # type: ignore[attr-defined]
            f"{e.lat_upper:.1f}",
            _short(e.pools),
            _short(e.agent_counts),
            _short(e.depths),  # type: ignore[attr-defined]
        )
    tok = budget_tok if budget_tok is not None else "-"
    lat = budget_lat if budget_lat is not None else "-"
    table.caption = f"budget: Tok {tok} USD/100 queries, Lat {lat} s/query; upper = one-sided 95% bound"
    return table


def _short(counts: dict[str, int]) -> str:
    return " ".join(f"{key}:{value}" for key, value in counts.items())


@app.command()
@reports_user_errors
def build(
    budget_tok: Annotated[float | None, typer.Option(help="Token-cost budget: expected USD per 100 queries.")] = None,
    budget_lat: Annotated[float | None, typer.Option(help="Latency budget: expected seconds per query.")] = None,
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code|mixed.")] = None,
    train: Annotated[int, typer.Option(min=1, help="Training questions (first N of the fixed split).")] = 600,
    val: Annotated[int, typer.Option(min=2, help="Validation questions (budgets are met on them).")] = 200,
    test: Annotated[int, typer.Option(min=2, help="Test questions (the reported numbers).")] = 400,
    epochs: Annotated[int, typer.Option(min=1, help="Training epochs.")] = 25,
    restarts: Annotated[
        int, typer.Option(min=1, help="Independent training runs; the best on validation is kept.")
    ] = 3,
    pools: Annotated[int | None, typer.Option(min=1, help="Number of pools (default 4).")] = None,
    lambda_tok: Annotated[float | None, typer.Option(min=0.0, help="Fix lambda_tok by hand (no targeting).")] = None,
    lambda_lat: Annotated[float | None, typer.Option(min=0.0, help="Fix lambda_lat by hand (no targeting).")] = None,
    delta: Annotated[float, typer.Option(help="Difficulty offset: > 0 pushes queries to costlier pools.")] = 0.0,
    max_pool: Annotated[int | None, typer.Option(min=0, help="Never select a pool above this one.")] = None,
    budget_conditioned: Annotated[
        bool,
        typer.Option(
            "--budget-conditioned",
            help="Train one controller for every budget from B / --budget-ratio to B; choose it at inference.",
        ),
    ] = False,
    budget_ratio: Annotated[
        float, typer.Option(help="--budget-conditioned: loosest / tightest budget of the range.")
    ] = 8.0,
    budget_steps: Annotated[int, typer.Option(help="--budget-conditioned: budgets of the training grid.")] = 4,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    base_url: BaseUrlOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    timeout: TimeoutOption = 60.0,
    concurrency: ConcurrencyOption = 16,
    api_key_file: ApiKeyFileOption = None,
    out: Annotated[Path | None, typer.Option(help="Run folder (default runs/<timestamp>).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the test result as one JSON object.")] = False,
) -> None:
    """Train a controller that meets the budgets (token cost and latency) with the best performance it can."""
    from datetime import datetime

    from agentbalance.policy.controller import ControllerConfig
    from agentbalance.train.budgets import Budget, BudgetRange
    from agentbalance.train.build import BuildSpec
    from agentbalance.train.build import build as run_build
    from agentbalance.train.reinforce import TrainConfig

    budget = Budget(budget_tok, budget_lat)
    if budget_tok is None and budget_lat is None and lambda_tok is None and lambda_lat is None:
        raise AgentBalanceError("give a budget (--budget-tok and/or --budget-lat) or fix --lambda-tok/--lambda-lat")
    budget_range = BudgetRange(budget, budget_ratio, budget_steps) if budget_conditioned else None
    spec = BuildSpec(
        world=world_spec,
        catalog=str(catalog) if catalog else None,
        roles=roles,
        budget=budget,
        sizes=(train, val, test),
        train=TrainConfig(epochs=epochs, seed=seed, lambda_tok=lambda_tok, lambda_lat=lambda_lat),
        controller=ControllerConfig(delta=delta, max_pool=max_pool),
        pools=pools,
        task=task,
        data=str(data) if data else None,
        limit=limit,
        live=LiveOptions(base_url, cache_dir, not no_cache, timeout, concurrency, api_key_file=api_key_file),
        restarts=restarts,
        budget_range=budget_range,
    )
    folder = out or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    console = Console(stderr=as_json)
    if world_spec in ("sim", "simulated"):
        console.print("world: simulated (a calibrated simulator, not real LLM calls)", highlight=False)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        stage = progress.add_task("preparing", total=None)
        epochs_task = progress.add_task("epochs", total=epochs * restarts)

        def on_stage(text: str) -> None:
            progress.update(stage, description=text)

        def on_epoch(epoch: int, record: dict[str, float]) -> None:
            progress.update(
                epochs_task,
                completed=epoch + 1,
                description=f"epoch {epoch + 1}: val Perf {100 * record['val_perf']:.1f}% "
                f"Tok {record['val_tok']:.3f} Lat {record['val_lat']:.1f}s",
            )

        built = run_build(spec, folder, on_stage=on_stage, on_epoch=on_epoch)
        progress.update(stage, description="done", total=1, completed=1)
    if built.restored:
        console.print(
            f"resumed: {len(built.restored)} of {restarts} training runs restored from {folder / 'checkpoints'}",
            highlight=False,
        )
    result = built.result
    if as_json:
        _print_result_json(result.test, budget, result.feasible, "test", folder)
        return
    console.print(
        _evaluation_table(
            "what the controller achieves", [("val", result.val), ("test", result.test)], budget_tok, budget_lat
        )
    )
    if result.points:
        console.print(_budget_points_table(result.points))
    if result.feasible:
        console.print("budget met on validation (upper bound); test numbers above", highlight=False)
    else:
        cheapest = result.cheapest
        console.print(
            f"budget NOT feasible: the cheapest reachable point is Tok {cheapest.tok:.4f} USD/100 queries, "
            f"Lat {cheapest.lat:.1f} s (one agent on the cheapest backbone, Perf {100 * cheapest.perf:.1f}%)",
            highlight=False,
        )
    quality = result.difficulty
    if quality.get("spearman") is not None:
        domains = ", ".join(
            f"{name} {row['spearman']:.2f}"
            for name, row in quality["per_domain"].items()
            if row["spearman"] is not None
        )
        console.print(
            f"difficulty estimator on test: rank correlation {quality['spearman']:.2f} with the true difficulty"
            + (f" (per domain: {domains})" if domains else ""),
            highlight=False,
        )
    import torch

    from agentbalance.train.budgets import budget_condition

    shown = built.splits.test[:3]
    examples = built.trainer.controller.construct(
        torch.stack([built.trainer.embeddings[q.id] for q in shown]),
        budget_condition(built.trainer.budget, len(shown)),
        [q.id for q in shown],
        delta=built.trainer.deltas[-1],
    )
    for mas in examples:
        _print_mas(console, mas, f"example {mas.query_id}")
    console.print(f"wrote {folder} (controller.pt, config.json, metrics.json, training.png)", highlight=False)


@app.command()
@reports_user_errors
def evaluate(
    model: Annotated[Path, typer.Option(help="A run folder of `agentbalance build`.")],
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    split: Annotated[str, typer.Option(help="test | val | train | all")] = "test",
    seed: Annotated[
        int | None, typer.Option(help="Seed of the world and its split (default: the run's, so its test split).")
    ] = None,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    base_url: BaseUrlOption = None,
    cache_dir: CacheDirOption = None,
    no_cache: NoCacheOption = False,
    timeout: TimeoutOption = 60.0,
    concurrency: ConcurrencyOption = 16,
    api_key_file: ApiKeyFileOption = None,
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
) -> None:
    """Evaluate a trained controller on a world, including one whose catalog it never saw (inductive)."""
    from agentbalance.encoders import TextEncoder
    from agentbalance.train.build import (
        BuildSpec,
        embed_queries,
        load_controller,
        read_run_config,
        resolve_world,
        run_roles,
        run_seed,
        serving_budget,
        spec_splits,
    )
    from agentbalance.train.reinforce import TrainConfig, policy_outcomes, summarise

    saved = read_run_config(model)
    saved_task = (saved.get("task") or {}) if task is None else {}
    spec = BuildSpec(
        world=world_spec,
        catalog=str(catalog) if catalog else None,
        train=TrainConfig(seed=run_seed(saved) if seed is None else seed),
        task=task or saved_task.get("name"),
        data=str(data) if data else saved_task.get("data"),
        limit=limit if limit is not None else saved_task.get("limit"),
        live=LiveOptions(base_url, cache_dir, not no_cache, timeout, concurrency, api_key_file=api_key_file),
    )
    world, catalogs, _, loaded_task = resolve_world(spec)
    encoder = TextEncoder()
    controller, config = load_controller(model, catalogs, None, encoder)
    splits = spec_splits(dataclasses.replace(spec, sizes=tuple(config["sizes"])), world, loaded_task)
    queries = splits.train + splits.val + splits.test if split == "all" else splits.get(split)
    asked = _serve_budget(budget_tok, budget_lat)
    served, delta = serving_budget(config, asked)
    budget = asked or served
    roles = run_roles(model, config)
    grader = loaded_task.score if loaded_task else None
    embeddings = embed_queries(encoder, queries)
    masses, outcomes = policy_outcomes(controller, world, roles, embeddings, queries, served, grader, delta)
    result = summarise(masses, outcomes, TrainConfig().confidence_z)
    feasible = result.meets(budget, upper=False)
    if as_json:
        _print_result_json(result, budget, feasible, split, model)
        return
    Console().print(_evaluation_table(f"{model} on {world.name}", [(split, result)], budget.tok, budget.lat))


@app.command()
@reports_user_errors
def export(
    model: Annotated[Path, typer.Option(help="A run folder of `agentbalance build`.")],
    query: Annotated[str, typer.Option(help="The query text.")],
    output_format: Annotated[str, typer.Option("--format", help="json | mermaid | autogen")] = "json",
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
) -> None:
    """Print the MAS the controller builds for one query: JSON, a mermaid flowchart, or a runnable
    AutoGen script (`--format autogen`)."""
    if output_format not in ("json", "mermaid", "autogen"):
        raise AgentBalanceError(f"unknown --format {output_format!r}; use json, mermaid or autogen")
    from agentbalance.train.budgets import budget_condition
    from agentbalance.train.build import load_controller, run_catalogs, run_roles, serving_budget

    controller, config = load_controller(model)
    served, delta = serving_budget(config, _serve_budget(budget_tok, budget_lat))
    from agentbalance.encoders import TextEncoder

    (mas,) = controller.construct_texts([query], TextEncoder(), budget_condition(served, 1), delta=delta)
    if output_format == "autogen":
        from agentbalance.adapters.autogen import autogen_script

        text = autogen_script(mas, run_catalogs(model, config).described, run_roles(model, config), query=query)
    else:
        text = json.dumps(mas.to_json(), indent=2) if output_format == "json" else mas.to_mermaid()
    sys.stdout.write(text + "\n")


@app.command()
@reports_user_errors
def curve(
    methods: Annotated[str, typer.Option(help="Comma-separated methods, or 'all' (see README).")] = "all",
    world_spec: Annotated[str, typer.Option("--world", help=WORLD_HELP)] = "sim",
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code|mixed.")] = None,
    points: Annotated[int, typer.Option(min=1, help="Settings swept per method (single: every kept backbone).")] = 8,
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
    """Performance-budget curves: sweep each method's cost knob, measure on test, P@T / P@L / AUC, plots.

    Rerun the same command after an interruption: finished points are skipped."""
    from datetime import datetime

    from agentbalance.evaluation.curve import run_curve
    from agentbalance.evaluation.methods import parse_methods
    from agentbalance.train.build import BuildSpec
    from agentbalance.train.reinforce import TrainConfig

    names = parse_methods(methods)
    spec = BuildSpec(
        world=world_spec,
        catalog=str(catalog) if catalog else None,
        roles=roles,
        sizes=(train, val, test),
        train=TrainConfig(epochs=epochs, seed=seed),
        task=task,
        data=str(data) if data else None,
        limit=limit,
    )
    folder = out or Path("runs") / datetime.now().strftime("curve-%Y%m%d-%H%M%S")
    console = Console(stderr=as_json)

    def on_point(row: CurveRow, resumed: bool) -> None:
        console.print(
            f"{'resumed' if resumed else 'measured'} {row.method} {row.setting}: Perf {100 * row.perf:.1f}% "
            f"Tok {row.tok:.4f} Lat {row.lat:.1f}s",
            highlight=False,
        )

    result = run_curve(spec, names, points, folder, on_point, lambda text: console.print(text, highlight=False))
    if as_json:
        sys.stdout.write(json.dumps({"summary": result.summary, "out": str(folder)}) + "\n")
        return
    table = Table(title=f"{world_spec}: performance at budget and AUC (test split)")
    table.add_column("method")
    for column in result.summary[0] if result.summary else []:
        if column != "method":
            table.add_column(column, justify="right")
    for row in result.summary:
        table.add_row(str(row["method"]), *(f"{100 * float(v):.1f}" for k, v in row.items() if k != "method"))
    console.print(table)
    console.print(
        f"wrote {folder} (curve.csv, summary.csv, curve-tok.png, curve-lat.png) in {result.seconds:.0f} s"
        + (f"; {result.skipped} points resumed" if result.skipped else ""),
        highlight=False,
    )


@app.command()
@reports_user_errors
def record(
    task: Annotated[str, typer.Option(help="The task whose questions every backbone answers (mmlu, math, ...).")],
    out: Annotated[Path, typer.Option(help="The replay-world folder to write.")],
    world_spec: Annotated[str, typer.Option("--world", help="live (or sim, to try the command offline)")] = "live",
    data: Annotated[Path | None, typer.Option(help="The task's local data file or folder.")] = None,
    limit: Annotated[int | None, typer.Option(help="The first N items of the task.")] = None,
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML: the backbones to record.")] = None,
    base_url: Annotated[str | None, typer.Option(help="Endpoint (else $AGENTBALANCE_BASE_URL).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Response cache folder.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the response cache.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight at once.")] = 16,
    api_key_file: ApiKeyFileOption = None,
    timeout: Annotated[float, typer.Option(help="Seconds per call before it is retried.")] = 60.0,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
) -> None:
    """Ask every backbone each question alone and write a replay world: calibrate once on real calls, train offline."""
    import asyncio

    from agentbalance.worlds.recording import record as record_world

    loaded_task = open_task(task, data, limit, seed)
    live = LiveOptions(
        base_url, cache_dir, not no_cache, timeout, concurrency, loaded_task.parse, api_key_file=api_key_file
    )
    world = open_world(world_spec, Catalog.load(catalog) if catalog else None, seed=seed, live=live)
    summary = asyncio.run(record_world(world, loaded_task, out, concurrency=concurrency))
    Console().print(
        f"recorded {summary.questions} questions x {summary.backbones} backbones into {out}: "
        f"{summary.calls} calls ({summary.cached} from the cache), {summary.failures} failed, "
        f"USD {summary.cost_usd:.4f}, {summary.wall_s:.1f} s",
        highlight=False,
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
