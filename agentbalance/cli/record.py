"""`agentbalance record`: ask every backbone each question alone (K times with --samples) and write a replay world.

The recording itself is `agentbalance.worlds.recording.record`; this module parses and prints.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentbalance.catalog import Catalog
from agentbalance.cli.app import (
    JudgeCatalogOption,
    JudgeOption,
    JudgeRubricOption,
    live_world_options,
    reports_user_errors,
)
from agentbalance.cli.progress import progress_bars
from agentbalance.errors import AgentBalanceError
from agentbalance.worlds import LiveOptions, judge_of, judge_spec, judged, open_task, open_world


@reports_user_errors
@live_world_options(
    per_backbone=1,
    per_backbone_help="Calls in flight per backbone: 1 (the default) records service times, not a server's queue.",
)
def record(
    task: Annotated[str, typer.Option(help="The task whose questions every backbone answers (mmlu, math, ...).")],
    out: Annotated[Path, typer.Option(help="The replay-world folder to write.")],
    world_spec: Annotated[str, typer.Option("--world", help="live (or sim, to try the command offline)")] = "live",
    data: Annotated[Path | None, typer.Option(help="The task's local data file or folder.")] = None,
    limit: Annotated[int | None, typer.Option(help="The first N items of the task.")] = None,
    catalog: Annotated[Path | None, typer.Option(help="Backbone catalog YAML: the backbones to record.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight at once.")] = 16,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    samples: Annotated[
        int, typer.Option(min=1, help="Answers per question and backbone (sample k is sent with seed k).")
    ] = 1,
    temperature: Annotated[
        float, typer.Option(help="Sampling temperature of the live calls; required > 0 with --samples > 1.")
    ] = 0.0,
    max_usd_total: Annotated[
        float | None,
        typer.Option(
            help="Stop starting calls once this recording has paid this many USD (cached calls are free); the "
            "questions every backbone answered are written, and a rerun with a larger cap continues."
        ),
    ] = None,
    judge: JudgeOption = None,
    judge_catalog: JudgeCatalogOption = None,
    judge_rubric: JudgeRubricOption = None,
    ask_missing: Annotated[
        bool,
        typer.Option(
            "--ask-missing",
            help="--task served: also ask every backbone of the catalog the log holds no answer of (default: record "
            "only the answers already served, reused without a call).",
        ),
    ] = False,
    *,
    live: LiveOptions,
) -> None:
    """Ask every backbone each question alone and write a replay world: calibrate once on real calls, train offline."""
    import asyncio

    from agentbalance.worlds.recording import record as record_world

    if ask_missing and task != "served":
        raise AgentBalanceError("--ask-missing completes a served log: use it with --task served --data DIR")
    loaded_task = open_task(task, data, limit, seed)
    live = dataclasses.replace(live, parse=loaded_task.parse, temperature=temperature)
    world = open_world(world_spec, Catalog.load(catalog) if catalog else None, seed=seed, live=live)
    only, served = None, None
    if task == "served":  # the answers already paid for are reused, not asked again
        from agentbalance.worlds.served_answers import ServedAnswers, read_served_answers

        assert data is not None  # the served task reads its questions from --data
        served = ServedAnswers(world, read_served_answers(data))
        world, only = served, None if ask_missing else set(served.answers)
        known = {name for _, name, _ in served.answers}
        if not ask_missing and not known & set(world.catalog.names):
            raise AgentBalanceError(
                f"record: the served log {data} holds no answer of a backbone of the catalog {world.catalog.source} "
                f"(it holds {', '.join(sorted(known)) or 'none'}); give the catalog it was served with (--catalog), "
                "or --ask-missing to ask the catalog's backbones"
            )
    # with a judge, every answer is graded: the `score` column, so the world trains offline afterwards
    world = judged(world, judge_spec(judge, judge_catalog, judge_rubric), live, seed)
    grader = judge_of(world)
    console = Console()
    with progress_bars(console) as progress:
        calls = progress.add_task("recording", total=None)

        def on_call(done: int, total: int, paid_usd: float) -> None:
            progress.update(calls, completed=done, total=total, description=f"recording: USD {paid_usd:.4f} paid")

        summary = asyncio.run(
            record_world(
                world,
                loaded_task,
                out,
                concurrency=concurrency,
                progress=on_call,
                samples=samples,
                concurrency_per_backbone=live.concurrency_per_backbone,
                max_usd_total=max_usd_total,
                only=only,
            )
        )
    times = f" x {samples} samples" if samples > 1 else ""
    if summary.capped:
        if world.simulated:
            cached = "asked again (the simulated world keeps no cache; its costs are modelled, not paid)"
        else:
            cached = (
                "paid again (the response cache is off)" if not live.use_cache else "served from the response cache"
            )
        console.print(
            f"stopped at the spend cap (--max-usd-total {max_usd_total:g}): USD {summary.paid_usd:.4f} paid; kept the "
            f"{summary.questions} of {summary.asked} questions every backbone answered ({summary.dropped} calls of "
            f"unfinished questions left out). To continue, rerun this command with a larger --max-usd-total: the "
            f"calls made so far are {cached}.",
            highlight=False,
        )
    console.print(
        f"recorded {summary.questions} questions x {summary.backbones} backbones{times} into {out}: "
        f"{summary.calls} calls ({summary.cached} from the cache), {summary.failures} failed, "
        f"USD {summary.cost_usd:.4f} recorded"
        + (f" (USD {summary.paid_usd:.4f} paid now)" if summary.cached else "")
        + f", {summary.wall_s:.1f} s",
        highlight=False,
    )
    if served is not None:
        console.print(f"{served.reused} answers reused from the served log (paid when they were served)")
    if grader is not None:
        console.print(grader.stats.describe() + " (not part of the recorded costs)", highlight=False)
    if summary.ungraded:
        why = "the judge gave no rating" if grader is not None else "no gold answer (grade them with --judge)"
        console.print(
            f"{summary.ungraded} of {summary.calls} answers could not be graded ({why}): written ungraded (an empty "
            "score), counted in no mean",
            highlight=False,
        )
