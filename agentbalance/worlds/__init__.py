"""Worlds: where LLM calls go (simulated, replay, live), all behind one protocol.

`open_world` turns a user's `--world` value into a world, `open_task` a `--task` value into a task (the registry's,
or the simulated world's synthetic domains); heavy modules load only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.tasks.base import Task
from agentbalance.worlds.base import RecordedWorld, World

if TYPE_CHECKING:
    from agentbalance.worlds.judge import Judge

WORLD_HELP = (
    "sim (the embedded simulator) | replay:DIR (recorded real outcomes) | "
    "live (an OpenAI-compatible endpoint: $AGENTBALANCE_BASE_URL, $AGENTBALANCE_API_KEY)"
)


@dataclass(frozen=True)
class LiveOptions:
    """How to reach an OpenAI-compatible endpoint; None fields fall back to the environment or defaults."""

    base_url: str | None = None
    cache_dir: Path | None = None
    use_cache: bool = True
    timeout_s: float = 60.0
    concurrency: int = 16
    parse: Callable[[str, Query], str | None] | None = None
    api_key_file: Path | None = None  # a file holding only the key; else $AGENTBALANCE_API_KEY (or per backbone)
    max_retries: int = 4
    deadline_s: float | None = None  # the most seconds one call may take, retries included (None: derived)
    temperature: float = 0.0  # sampling temperature of every request (record --samples K > 1 needs one > 0)
    max_tokens: int | None = None  # completion-token limit of backbones whose catalog sets none (None: 4096/16384)
    concurrency_per_backbone: int | None = None  # calls in flight per backbone (record: 1, so latency is service)


def absolute_world_spec(spec: str) -> str:
    """A `--world` value that opens the same world from any working directory (a replay folder made absolute)."""
    if spec.startswith("replay:"):
        return f"replay:{Path(spec.removeprefix('replay:')).resolve()}"
    return spec


def open_world(spec: str, catalog: Catalog | None = None, seed: int = 0, live: LiveOptions | None = None) -> World:
    """`sim`/`simulated`, `replay:DIR` or `live`. In a replay world the catalog defaults to the world's models.yaml."""
    if spec in ("sim", "simulated"):
        from agentbalance.worlds.simulated import SimulatedWorld

        return SimulatedWorld(catalog or Catalog.load(), seed=seed)
    if spec.startswith("replay:"):
        from agentbalance.worlds.replay import ReplayWorld

        folder = Path(spec.removeprefix("replay:"))
        world = ReplayWorld.load(folder, seed=seed)
        if catalog is not None:
            world = world.with_catalog(catalog)
        return world
    if spec == "live":
        from agentbalance.worlds.live import LiveWorld

        options = live or LiveOptions()
        return LiveWorld(  # the key comes from the environment or a file the user names, never a flag's text
            catalog or Catalog.load(),
            base_url=options.base_url,
            concurrency=options.concurrency,
            timeout_s=options.timeout_s,
            max_retries=options.max_retries,
            cache_dir=options.cache_dir,
            use_cache=options.use_cache,
            parse=options.parse,
            seed=seed,
            deadline_s=options.deadline_s,
            api_key_file=options.api_key_file,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            concurrency_per_backbone=options.concurrency_per_backbone,
        )
    raise AgentBalanceError(f"unknown world {spec!r}; use {WORLD_HELP}")


@dataclass(frozen=True)
class JudgeSpec:
    """`--judge BACKBONE`: grade every answer with this backbone as an LLM judge, one of `catalog` (a YAML path;
    default: the answering world's catalog, where an entry's own `base_url` reaches another endpoint), with
    `rubric` (a YAML path; default: the MT-Bench-style rubrics of `agentbalance.worlds.judge`)."""

    backbone: str
    catalog: str | None = None
    rubric: str | None = None


def judge_spec(backbone: str | None, catalog: Path | None, rubric: Path | None) -> JudgeSpec | None:
    """The judge of the `--judge`, `--judge-catalog` and `--judge-rubric` flags (None: no judge)."""
    if backbone is None:
        if catalog is not None or rubric is not None:
            raise AgentBalanceError("--judge-catalog and --judge-rubric describe a judge: name it with --judge NAME")
        return None
    return JudgeSpec(backbone, str(catalog) if catalog else None, str(rubric) if rubric else None)


def judged(world: World, judge: JudgeSpec | None, live: LiveOptions | None = None, seed: int = 0) -> World:
    """`world` with every answer graded by `judge` (a `JudgedWorld`; `world` itself without a judge). The judge is
    called like a live world with `live`'s endpoint options, at temperature 0. Only a live world has answers to
    judge: the simulator's texts imitate answers and a replay world keeps none (record it with `record --judge`)."""
    if judge is None:
        return world
    from agentbalance.worlds.judge import Judge, JudgedWorld, load_rubric

    if world.simulated or isinstance(world, RecordedWorld):
        raise AgentBalanceError(
            f"--judge grades real answers, and the {world.name} world has none to show it: use it with "
            "--world live (a replay world recorded with `record --judge` already holds the judge's scores)"
        )
    judges = Catalog.load(judge.catalog) if judge.catalog else world.catalog
    backbone = judges[judge.backbone]
    rubric = load_rubric(Path(judge.rubric)) if judge.rubric else None
    # at temperature 0, its verdict as text, and no per-backbone queue: a judge's latency is not measured
    options = replace(live or LiveOptions(), temperature=0.0, parse=None, concurrency_per_backbone=None)
    return JudgedWorld(world, Judge(open_world("live", judges, seed, options), backbone, rubric))


def judge_of(world: World) -> Judge | None:
    """The judge grading `world`'s answers, if any (its `stats` are what grading cost)."""
    from agentbalance.worlds.judge import JudgedWorld

    return world.judge if isinstance(world, JudgedWorld) else None


def open_task(name: str, data: str | Path | None = None, limit: int | None = None, seed: int = 0) -> Task:
    """A `--task` value: a task of the registry (see `agentbalance.tasks.registry.load_task`) or a synthetic domain
    of the simulated world (`synthetic-general|math|code`: `limit` items, default 500, drawn by `seed`)."""
    from agentbalance.tasks.registry import load_task
    from agentbalance.worlds.simulated.task import SYNTHETIC_TASKS

    return load_task(name, data, limit, seed, generated=SYNTHETIC_TASKS)


def task_names() -> tuple[str, ...]:
    """Every name `open_task` knows: the registry's tasks, then the synthetic domains."""
    from agentbalance.tasks.registry import TASK_NAMES
    from agentbalance.worlds.simulated.task import SYNTHETIC_TASKS

    return (*TASK_NAMES, *SYNTHETIC_TASKS)
