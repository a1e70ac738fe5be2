"""`agentbalance build`: train a controller that meets the budgets, with progress, and print what it achieves.

It never trains itself: it fills a `BuildSpec` and calls `agentbalance.train.build.build`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from agentbalance.cli.app import (
    AddressOption,
    ConcurrencyOption,
    DataOption,
    ExecutorOption,
    JudgeCatalogOption,
    JudgeOption,
    JudgeRubricOption,
    LimitOption,
    TaskOption,
    live_world_options,
    reports_user_errors,
)
from agentbalance.cli.progress import progress_bars
from agentbalance.cli.tables import budget_points_table, evaluation_table, print_mas, print_result_json
from agentbalance.errors import AgentBalanceError
from agentbalance.worlds import WORLD_HELP, LiveOptions, judge_spec

if TYPE_CHECKING:
    from agentbalance.train.build import Built


@reports_user_errors
@live_world_options()
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
    menu_guard: Annotated[
        bool,
        typer.Option(
            help="Serve a budget by the menu's best plan wherever the trained policy does not beat it on held-out "
            "folds (docs/training-and-budgets.md)."
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    task: TaskOption = None,
    data: DataOption = None,
    limit: LimitOption = None,
    concurrency: ConcurrencyOption = 16,
    judge: JudgeOption = None,
    judge_catalog: JudgeCatalogOption = None,
    judge_rubric: JudgeRubricOption = None,
    out: Annotated[Path | None, typer.Option(help="Run folder (default runs/<timestamp>).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the test result as one JSON object.")] = False,
    *,
    live: LiveOptions,
) -> None:
    """Train a controller that meets the budgets (token cost and latency) with the best performance it can."""
    from datetime import datetime

    from agentbalance.budgets import Budget, BudgetRange
    from agentbalance.executors import ExecutorSpec
    from agentbalance.experiment import ExperimentSpec
    from agentbalance.policy.controller import ControllerConfig
    from agentbalance.train.build import BuildSpec, holds_another_build
    from agentbalance.train.build import build as run_build
    from agentbalance.train.config import TrainConfig

    executor_spec = ExecutorSpec(executor, address)
    budget = Budget(budget_tok, budget_lat)
    if budget_tok is None and budget_lat is None and lambda_tok is None and lambda_lat is None:
        raise AgentBalanceError("give a budget (--budget-tok and/or --budget-lat) or fix --lambda-tok/--lambda-lat")
    budget_range = BudgetRange(budget, budget_ratio, budget_steps) if budget_conditioned else None
    spec = BuildSpec(
        ExperimentSpec(
            world=world_spec,
            catalog=str(catalog) if catalog else None,
            roles=roles,
            sizes=(train, val, test),
            pools=pools,
            task=task,
            data=str(data) if data else None,
            limit=limit,
            live=live,
            judge=judge_spec(judge, judge_catalog, judge_rubric),
            seed=seed,
        ),
        budget=budget,
        train=TrainConfig(epochs=epochs, lambda_tok=lambda_tok, lambda_lat=lambda_lat, menu_guard=menu_guard),
        controller=ControllerConfig(delta=delta, max_pool=max_pool),
        restarts=restarts,
        budget_range=budget_range,
    )
    folder = out or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    if holds_another_build(folder, spec):
        raise AgentBalanceError(
            f"{folder} already holds a controller built with other options; give another --out, or remove "
            "that folder to replace it (a rerun with the same options resumes there)"
        )
    console = Console(stderr=as_json)
    if world_spec in ("sim", "simulated"):
        console.print("world: simulated (a calibrated simulator, not real LLM calls)", highlight=False)
    with progress_bars(console) as progress:
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

        def on_note(note: str) -> None:
            progress.console.print(note, highlight=False)

        built = run_build(spec, folder, on_stage=on_stage, on_epoch=on_epoch, executor=executor_spec, on_note=on_note)
        progress.update(stage, description=f"done; {built.result.describe_kept(restarts)}", total=1, completed=1)
    if built.trained_elsewhere:
        console.print(built.trained_elsewhere, highlight=False)
    used = tuple(len(built.splits.get(name)) for name in ("train", "val", "test"))
    if used != (train, val, test):  # a small world: its fixed splits hold fewer questions than asked
        console.print(
            f"note: the world's splits hold fewer questions than asked: train / val / test use "
            f"{' / '.join(map(str, used))} (asked {train} / {val} / {test}); budgets are checked on {used[1]}",
            highlight=False,
        )
    if built.judge is not None:
        console.print(built.judge.describe() + " (apart from the Tok of the MAS)", highlight=False)
    if built.restored:
        console.print(
            f"resumed: {len(built.restored)} of {restarts} training runs restored from {folder / 'checkpoints'}",
            highlight=False,
        )
    result = built.result
    if as_json:
        print_result_json(result.test, budget, result.feasible, "test", folder)
        return
    print_report(console, built, folder, budget_tok, budget_lat)


def print_report(
    console: Console, built: Built, folder: Path, budget_tok: float | None, budget_lat: float | None
) -> None:
    """What a build achieved, as `build` prints it: validation and test, the budget's verdict, the difficulty
    estimator's quality and example MAS of the test questions."""
    result = built.result
    console.print(
        evaluation_table(
            "what the controller achieves",
            [("val", result.val), ("test", result.test)],
            budget_tok,
            budget_lat,
            console.width,
        )
    )
    if result.points:
        console.print(budget_points_table(result.points, console.width))
    if result.guard:
        console.print(guard_summary(result.guard), highlight=False)
    judged = result.judged
    if result.feasible and judged is not None:
        console.print(
            f"budget met by the cost on the training and validation questions (upper bound Tok {judged.tok_upper:.4f}, "
            f"Lat {judged.lat_upper:.1f} s): the kept policy is the anchored start, which learned from neither; "
            "test numbers above",
            highlight=False,
        )
    elif result.feasible:
        console.print("budget met on validation (upper bound); test numbers above", highlight=False)
    else:
        cheapest, which = result.cheapest, "fastest" if budget_tok is None else "cheapest"  # a Lat budget alone
        console.print(
            f"budget NOT feasible: the {which} reachable point is Tok {cheapest.tok:.4f} USD/100 queries, "
            f"Lat {cheapest.lat:.1f} s (one agent on the {which} backbone, Perf {100 * cheapest.perf:.1f}%)",
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
    from agentbalance.trained import TrainedController

    constructed = TrainedController.load(folder).construct_many(built.splits.test)
    for mas in constructed[:3]:
        print_mas(console, mas, f"example {mas.query_id}")
    cascades = [mas for mas in constructed if mas.conditional]
    if cascades and not any(mas.conditional for mas in constructed[:3]):
        print_mas(
            console,
            cascades[0],
            f"example {cascades[0].query_id} ({len(cascades)} of {len(constructed)} test MAS are conditional)",
        )
    console.print(f"wrote {folder} (controller.pt, config.json, metrics.json, training.png)", highlight=False)


def guard_summary(decisions: list[dict[str, Any]]) -> str:
    """What serves the budget(s): the trained policy, or the menu's best plan where the policy did not beat it on
    held-out folds (`train.menu_guard`), in a sentence."""
    from agentbalance.mas import MAS
    from agentbalance.train.build import describe_template

    if len(decisions) > 1:
        by_plan = sum(decision["served_by"] == "plan" for decision in decisions)
        return (
            f"menu guard: the trained policy serves {len(decisions) - by_plan} of the {len(decisions)} budgets of the "
            f"range; the menu's best plan serves {by_plan}, where the policy did not beat it on held-out folds"
        )
    (decision,) = decisions
    if decision["plan"] is None:
        return "menu guard: no plan of the menu fits the budget on every fold; the trained policy serves it"
    plan = describe_template(MAS.from_json(decision["plan"]))
    versus = (
        f"{100 * decision['difference']:+.1f} points against it on held-out folds (margin "
        f"{100 * decision['margin']:.1f})"
    )
    if decision["served_by"] == "plan":
        return (
            f"menu guard: one plan serves every query, the menu's best that fits ({plan}); the trained policy: {versus}"
        )
    return f"menu guard: the trained policy serves; the menu's best plan that fits ({plan}): policy {versus}"
