"""`agentbalance run`, `evaluate` and `export`: a MAS or a trained controller on queries.

They parse and print; constructing, running and grading go through `Runner` and `TrainedController`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from agentbalance.agreement import FREE_TEXT_THRESHOLD
from agentbalance.catalog import Catalog
from agentbalance.cli.app import (
    AgreementThresholdOption,
    ConcurrencyOption,
    DataOption,
    JudgeCatalogOption,
    JudgeOption,
    JudgeRubricOption,
    LimitOption,
    ServeBudgetLatOption,
    ServeBudgetTokOption,
    TaskOption,
    live_world_options,
    reports_user_errors,
    run_world,
    serve_budget,
)
from agentbalance.cli.tables import agents_table, evaluation_table, print_result_json
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query, read_queries
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import Caps
from agentbalance.runtime.runner import Runner
from agentbalance.task_rules import TaskRules
from agentbalance.tasks.base import Task
from agentbalance.worlds import WORLD_HELP, LiveOptions, judge_of, judge_spec, judged, open_task, open_world
from agentbalance.worlds.base import RecordedWorld, World, query_for

if TYPE_CHECKING:
    from agentbalance.budgets import Budget
    from agentbalance.measuring import Evaluation

# how a user of `run` names a replay world's recorded questions (`query_for`'s hint)
RECORDED_QUERIES_HINT = 'give them with --input FILE.jsonl, one {"id": "..."} a line, not as a QUERY text'


def _roles_for(mas: MAS, roles: str | None, world: World | None) -> RoleSet:
    """The role library in use: the one named, else the world's default (none: no world), else the shipped
    library that holds every role the MAS uses."""
    if roles is not None:
        return RoleSet.load(roles)
    if isinstance(world, RecordedWorld):
        return RoleSet.load(world.default_roles)
    wanted = {agent.role for agent in mas.agents}
    for domain in ("general", "math", "code", "mixed"):  # the domain libraries first, then the union of roles
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
    if input_path is not None:  # a replay world's file may name its questions by id alone
        queries = read_queries(input_path, question_optional=isinstance(world, RecordedWorld))
        return [query_for(world, query) for query in queries]
    if not (question or "").strip():
        raise AgentBalanceError("the QUERY text is blank: give a question, or --input FILE.jsonl")
    asked = query_for(world, question, hint=RECORDED_QUERIES_HINT)
    return [asked.model_copy(update={"id": "q1"})]  # a lone QUERY text is query q1


@reports_user_errors
@live_world_options()
def run(
    question: Annotated[str | None, typer.Argument(help="The query text (or use --input).")] = None,
    mas_path: Annotated[Path | None, typer.Option("--mas", help="A MAS to run, as JSON (see docs/mas.md).")] = None,
    model: Annotated[Path | None, typer.Option(help="A run folder of `build`: construct the MAS per query.")] = None,
    input_path: Annotated[Path | None, typer.Option("--input", help="JSONL queries, one object a line.")] = None,
    world_spec: Annotated[
        str | None, typer.Option("--world", help=f"{WORLD_HELP} (default: a --model's own world, else sim)")
    ] = None,
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    roles: Annotated[str | None, typer.Option(help="Role library: a path or general|math|code|mixed.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    concurrency: ConcurrencyOption = 32,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    max_usd: Annotated[float | None, typer.Option(help="Hard per-query USD cap (> 0).")] = None,
    max_seconds: Annotated[float | None, typer.Option(help="Hard per-query seconds cap (> 0).")] = None,
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
    judge: JudgeOption = None,
    judge_catalog: JudgeCatalogOption = None,
    judge_rubric: JudgeRubricOption = None,
    agreement_threshold: AgreementThresholdOption = FREE_TEXT_THRESHOLD,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per query, a line each (JSONL).")] = False,
    *,
    live: LiveOptions,
) -> None:
    """Execute a MAS on one query or a JSONL file of queries; print answer, cost, latency per agent."""
    caps = Caps(max_usd, max_seconds)
    if (mas_path is None) == (model is None):
        raise AgentBalanceError("give either --mas FILE.json or --model RUN_FOLDER (exactly one)")
    if model is not None:  # by default where it was trained and on its backbones, as `evaluate` does
        world_spec, catalog = run_world(model, world_spec, catalog)
    loaded_catalog = Catalog.load(catalog) if catalog is not None else None
    loaded_task = _load_task(task, data, limit, seed, question, input_path)
    live = dataclasses.replace(live, parse=loaded_task.parse if loaded_task else None)
    world = open_world(world_spec or "sim", loaded_catalog, seed=seed, live=live)
    world = judged(world, judge_spec(judge, judge_catalog, judge_rubric), live, seed)
    from agentbalance.experiment import task_roles

    default_roles = roles or (task_roles(loaded_task) if loaded_task else None)
    rules = TaskRules.of(loaded_task, world, threshold=agreement_threshold)
    if model is not None:
        from agentbalance.trained import TrainedController

        queries = _queries_for(question, input_path, world, loaded_task)
        library = RoleSet.load(default_roles) if default_roles is not None else None
        controller = TrainedController.load(model, world=world, roles=library)
        traces = controller.run(
            queries,
            world,
            budget=serve_budget(budget_tok, budget_lat),
            caps=caps,
            concurrency=concurrency,
            grader=rules.grader,
            same_answer=rules.same_answer,
        )
    else:
        assert mas_path is not None
        if budget_tok is not None or budget_lat is not None:
            raise AgentBalanceError("--budget-tok/--budget-lat choose the budget of a --model; a --mas is fixed")
        mas = MAS.load(mas_path)  # checked before anything else is read: a bad MAS is the first error
        library = _roles_for(mas, default_roles, world)
        mas.check_against(world.catalog, library, source=str(mas_path))
        queries = _queries_for(question, input_path, world, loaded_task)
        runner = Runner(
            world, library, concurrency=concurrency, caps=caps, grader=rules.grader, same_answer=rules.same_answer
        )
        traces = runner.run_sync([(mas, query) for query in queries])
    grading = judge_of(world)
    if as_json:
        for trace in traces:
            sys.stdout.write(json.dumps(trace.to_json()) + "\n")
        if grading is not None:  # stdout stays JSONL
            Console(stderr=True, highlight=False).print(grading.stats.describe() + " (apart from the MAS's cost)")
        return
    console = Console()
    if world.simulated:
        console.print("world: simulated (a calibrated simulator, not real LLM calls)", highlight=False)
    else:
        console.print(f"world: {world.name}", highlight=False)
    for trace in traces:
        console.print(agents_table(trace, console.width))
        console.print(
            f"answer: {escape(str(trace.answer))} ({_grade_text(trace.score)})\ncost: ${trace.cost_usd:.6f}  "
            f"latency: {trace.latency_s:.1f} s (modelled critical path)  wall: {trace.wall_s:.3f} s"
            + (f"  failures: {trace.failures}" if trace.failures else "")
            + (f"  capped: {escape(trace.capped)}" if trace.capped else "")
            + ("  escalated: inputs disagreed" if trace.escalated else ""),
            highlight=False,
        )
    if len(traces) > 1:
        known = [t.score for t in traces if t.score is not None]
        perf = f"{100 * sum(known) / len(known):.1f}%" if known else "n/a"
        perf += f" (graded {len(known)} of {len(traces)})" if len(known) < len(traces) else ""
        measure = "accuracy" if all(score in (0.0, 1.0) for score in known) else "mean score"
        tok = 100 * sum(t.cost_usd for t in traces) / len(traces)
        lat = sum(t.latency_s for t in traces) / len(traces)
        escalated = sum(t.escalated for t in traces)
        console.print(
            f"{len(traces)} queries: {measure} {perf}, Tok ${tok:.4f} per 100 queries, Lat {lat:.1f} s per query"
            + (f", escalated {100 * escalated / len(traces):.0f}%" if escalated else ""),
            highlight=False,
        )
    if grading is not None:
        console.print(grading.stats.describe() + " (apart from the MAS's cost)", highlight=False)


def _grade_text(score: float | None) -> str:
    """How `run` shows an answer's grade: right or wrong (a score of 1 or 0), a judge's score, or no grade."""
    if score is None:
        return "gold unknown"
    return {1.0: "correct", 0.0: "wrong"}.get(score, f"score {score:.2f}")


def _over_budget(result: Evaluation, budget: Budget) -> str:
    """Which means exceed the budget, and by what."""
    parts = []
    if budget.tok is not None and result.tok > budget.tok:
        parts.append(f"Tok {result.tok:.4g} over {budget.tok:.4g} USD/100 queries")
    if budget.lat is not None and result.lat > budget.lat:
        parts.append(f"Lat {result.lat:.4g} over {budget.lat:.4g} s/query")
    return ", ".join(parts)


@reports_user_errors
@live_world_options()
def evaluate(
    model: Annotated[Path, typer.Option(help="A run folder of `agentbalance build`.")],
    world_spec: Annotated[
        str | None, typer.Option("--world", help=f"{WORLD_HELP} (default: the world it was trained in)")
    ] = None,
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML (default: the world's).")] = None,
    split: Annotated[str, typer.Option(help="test | val | train | all (every question of the world)")] = "test",
    seed: Annotated[
        int | None, typer.Option(help="Seed of the world and its split (default: the run's, so its test split).")
    ] = None,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    concurrency: ConcurrencyOption = 16,
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
    judge: Annotated[
        str | None,
        typer.Option(help="Live world: grade the answers with this backbone as an LLM judge (default: the run's own)."),
    ] = None,
    judge_catalog: JudgeCatalogOption = None,
    judge_rubric: JudgeRubricOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    *,
    live: LiveOptions,
) -> None:
    """Evaluate a trained controller on a world, including one whose catalog it never saw (inductive)."""
    from agentbalance.experiment import resolve_world
    from agentbalance.trained import TrainedController

    controller = TrainedController.load(model)
    spec = controller.experiment_spec(
        world_spec,
        catalog=str(catalog) if catalog else None,
        seed=seed,
        task=task,
        data=str(data) if data else None,
        limit=limit,
        live=live,
        judge=judge_spec(judge, judge_catalog, judge_rubric),
    )
    asked = serve_budget(budget_tok, budget_lat)
    world = resolve_world(spec)[0]
    result = controller.evaluate(world, split, budget=asked, spec=spec)
    grading = judge_of(world)
    served = controller.serving(asked)[0]  # a budget-conditioned controller serves within its range
    budget = asked or served
    feasible = result.meets(budget, upper=False)
    if as_json:
        print_result_json(result, budget, feasible, split, model)
        if grading is not None:  # stdout stays one JSON object
            Console(stderr=True, highlight=False).print(grading.stats.describe() + " (apart from the Tok of the MAS)")
        return
    console = Console()
    console.print(
        evaluation_table(f"{model} on {spec.world}", [(split, result)], budget.tok, budget.lat, console.width)
    )
    if grading is not None:
        console.print(grading.stats.describe() + " (apart from the Tok of the MAS)", highlight=False)
    if asked is not None and served != asked:
        console.print(f"served as the nearest budget of its range: {served.describe()}", highlight=False)
    if feasible:
        console.print(f"budget met on {split} (means)", highlight=False)
    else:
        console.print(f"budget NOT met on {split}: {_over_budget(result, budget)}", highlight=False)


EXPORT_FORMATS = ("json", "mermaid", "autogen", "agent-framework", "langgraph")


@reports_user_errors
def export(
    model: Annotated[Path | None, typer.Option(help="A run folder of `build`: its MAS for --query.")] = None,
    mas_path: Annotated[Path | None, typer.Option("--mas", help="A MAS you wrote, as JSON (docs/mas.md).")] = None,
    query: Annotated[
        str | None, typer.Option(help="The query text (with --model; with --mas, the script's default question).")
    ] = None,
    output_format: Annotated[str, typer.Option("--format", help=" | ".join(EXPORT_FORMATS))] = "json",
    catalog: Annotated[
        Path | None, typer.Option(help="With --mas: the backbone catalog YAML (default: the shipped one).")
    ] = None,
    roles: Annotated[
        str | None, typer.Option(help="With --mas: the role library, a path or general|math|code|mixed.")
    ] = None,
    budget_tok: ServeBudgetTokOption = None,
    budget_lat: ServeBudgetLatOption = None,
) -> None:
    """Print a MAS (the one a trained controller builds for one query, or one you wrote): JSON, a mermaid flowchart,
    or a runnable script for AutoGen, Microsoft Agent Framework or LangGraph."""  # fmt: skip
    if output_format not in EXPORT_FORMATS:
        raise AgentBalanceError(f"unknown --format {output_format!r}; use {', '.join(EXPORT_FORMATS)}")
    if (mas_path is None) == (model is None):
        raise AgentBalanceError("give either --model RUN_FOLDER (with --query) or --mas FILE.json (exactly one)")
    if model is not None:
        if query is None:
            raise AgentBalanceError("--model needs --query TEXT: the question whose MAS to export")
        if catalog is not None or roles is not None:
            raise AgentBalanceError("--catalog and --roles go with --mas; a --model uses the ones it was built with")
        from agentbalance.trained import TrainedController

        controller = TrainedController.load(model)
        mas = controller.construct(query, serve_budget(budget_tok, budget_lat))
        used_catalog, library = controller.catalog(), controller.roles
    else:
        assert mas_path is not None
        if budget_tok is not None or budget_lat is not None:
            raise AgentBalanceError("--budget-tok/--budget-lat choose the budget of a --model; a --mas is fixed")
        mas = MAS.load(mas_path)  # checked before anything else is read: a bad MAS is the first error
        used_catalog = Catalog.load(catalog)
        library = _roles_for(mas, roles, None)
        mas.check_against(used_catalog, library, source=str(mas_path))
    sys.stdout.write(_exported(mas, output_format, used_catalog, library, query) + "\n")


def _exported(mas: MAS, output_format: str, catalog: Catalog, roles: RoleSet, query: str | None) -> str:
    """The MAS in one export format (the frameworks' scripts import their adapter, hence their extra, only here)."""
    if output_format == "json":
        return json.dumps(mas.to_json(), indent=2)
    if output_format == "mermaid":
        return mas.to_mermaid()
    if output_format == "autogen":
        from agentbalance.adapters.autogen import autogen_script

        return autogen_script(mas, catalog, roles, query=query)
    if output_format == "agent-framework":
        from agentbalance.adapters.agent_framework import agent_framework_script

        return agent_framework_script(mas, catalog, roles, query=query)
    from agentbalance.adapters.langgraph import langgraph_script

    return langgraph_script(mas, catalog, roles, query=query)
