"""`agentbalance build` as a function: pools, difficulty pretraining, REINFORCE to a budget, a saved run folder.

Everything a later `run`/`evaluate` needs is written to the run folder; nothing depends on the process state.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import Experiment
from agentbalance.files import atomic_write
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerCatalogs, ControllerContext
from agentbalance.policy.controller import Controller, ControllerConfig
from agentbalance.pooling import build_pools
from agentbalance.query import Query
from agentbalance.roles import Role, RoleSet
from agentbalance.tasks.base import Task
from agentbalance.train.budgets import Budget, BudgetRange
from agentbalance.train.checkpoints import RestartCheckpoints, build_fingerprint
from agentbalance.train.data import Splits, task_splits, world_splits
from agentbalance.train.reinforce import TrainConfig, Trainer, TrainResult, evaluation_json
from agentbalance.worlds import LiveOptions, open_task, open_world

CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class BuildSpec:
    """What the user asked for."""

    world: str = "sim"
    catalog: str | None = None
    roles: str | None = None
    budget: Budget = field(default_factory=Budget)
    sizes: tuple[int, int, int] = (600, 200, 400)
    train: TrainConfig = field(default_factory=TrainConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    pools: int | None = None
    task: str | None = None  # take the questions from a task (its loader and scorer) instead of the world's
    data: str | None = None
    limit: int | None = None
    live: LiveOptions | None = None
    restarts: int = 3  # independent training runs; the best on validation is kept
    anchored: bool = True  # the first restart starts from the best single backbone that fits (Trainer.anchor)
    budget_range: BudgetRange | None = None  # budget-conditioned: one controller for every budget of the range


@dataclass
class Built:
    """A trained controller with everything needed to use it."""

    controller: Controller
    trainer: Trainer
    result: TrainResult
    splits: Splits
    out: Path
    restored: list[int] = field(default_factory=list)  # restarts resumed from checkpoints of a killed build


def embed_queries(encoder: TextEncoder, queries: list[Query]) -> dict[str, torch.Tensor]:
    """Query embeddings by id (the controller sees the rendered question and choices, nothing else)."""
    vectors = encoder.encode([q.render() for q in queries])
    return {q.id: torch.from_numpy(v.copy()) for q, v in zip(queries, vectors, strict=True)}


def resolve_world(spec: BuildSpec) -> tuple[Any, ControllerCatalogs, RoleSet, Task | None]:
    """The world, the catalogs the controller sees, the role library, and the task if one is named."""
    task = open_task(spec.task, spec.data, spec.limit, spec.train.seed) if spec.task else None
    live = spec.live or LiveOptions()
    if task is not None:
        live = dataclasses.replace(live, parse=task.parse)
    catalog = Catalog.load(spec.catalog) if spec.catalog else None
    world = open_world(spec.world, catalog, seed=spec.train.seed, live=live)
    if not hasattr(world, "answer") and task is None:
        raise AgentBalanceError(
            f"training in the {spec.world!r} world needs --task NAME: its scorer grades the answers"
        )
    default_roles = getattr(world, "default_roles", None) or (task_roles(task) if task else "mixed")
    return world, ControllerCatalogs.of_world(world), RoleSet.load(spec.roles or default_roles), task


def task_roles(task: Task) -> str:
    """The shipped role library of a task's domain."""
    return task.domain if task.domain in ("general", "math", "code") else "mixed"


def spec_splits(spec: BuildSpec, world: Any, task: Task | None) -> Splits:
    """The task's items split by hash when a task is named, else the world's own fixed splits."""
    if task is not None:
        return task_splits(list(task.items()), spec.sizes, spec.train.seed)
    return world_splits(world, spec.sizes, seed=spec.train.seed)


def build(
    spec: BuildSpec,
    out: Path,
    roles: RoleSet | None = None,
    on_stage: Callable[[str], None] = lambda stage: None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
) -> Built:
    """Open the experiment, train on it, save the run folder (resuming from its restart checkpoints)."""
    with one_torch_thread():
        torch.manual_seed(spec.train.seed)
        started = time.perf_counter()
        experiment = Experiment.open(spec, roles, on_stage)
        checkpoints = RestartCheckpoints(out / "checkpoints", build_fingerprint(spec))
        controller, trainer, result = train_on(experiment, spec, on_stage, on_epoch, checkpoints)
        seconds = time.perf_counter() - started
        save_run(out, controller, spec, experiment.catalogs, experiment.pools.pools, result, experiment.roles, seconds)
    return Built(controller, trainer, result, experiment.splits, out, checkpoints.restored)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Train on one intra-op thread: floating-point sums then run in one fixed order, so one seed gives
    bit-identical controllers in every process (with several threads they differ in the last bits and a
    resumed build would not equal an uninterrupted one). The models are small: one thread costs little."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def train_on(
    experiment: Experiment,
    spec: BuildSpec,
    on_stage: Callable[[str], None] = lambda stage: None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
    checkpoints: RestartCheckpoints | None = None,
) -> tuple[Controller, Trainer, TrainResult]:
    """Independent training restarts on one experiment; the best on validation is kept (REINFORCE here
    is high-variance), the first restart's anchored start preferred by the one-standard-error rule. `spec`
    gives the budget (or range), the training knobs and the restarts; with
    `checkpoints`, finished restarts are saved, and found ones are restored instead of retrained."""
    splits = experiment.splits
    best: tuple[Controller, Trainer, TrainResult] | None = None
    margin = 0.0  # the anchored first restart's: every trained policy must beat the anchored start by it
    for restart in range(spec.restarts):
        torch.manual_seed(spec.train.seed + 1000 * restart)
        config = dataclasses.replace(spec.train, seed=spec.train.seed + restart)
        controller = Controller(experiment.context, spec.controller)
        trainer = Trainer(
            controller,
            experiment.world,
            experiment.roles,
            experiment.embeddings,
            spec.budget,
            config,
            experiment.grader,
            spec.budget_range,
        )
        offset = restart * spec.train.epochs
        saved = checkpoints.load(restart) if checkpoints is not None else None
        if saved is not None:
            on_stage(f"run {restart + 1} of {spec.restarts} restored from its checkpoint")
            controller.config = saved.controller
            controller.load_state_dict(saved.state)
            result = saved.result
            trainer.deltas = list(result.budget_range.deltas) if result.budget_range else [controller.config.delta]
            for epoch, record in enumerate(result.history):
                if on_epoch is not None:
                    on_epoch(offset + epoch, record)
        else:
            on_stage(f"pretraining the difficulty estimator (run {restart + 1} of {spec.restarts})")
            trainer.pretrain_difficulty(splits.train)
            if spec.anchored and restart == 0:
                templates = trainer.anchor(splits.train, splits.val)
                imitated = ", ".join(dict.fromkeys(describe_template(mas) for mas in templates))
                if imitated:
                    on_stage(f"run 1 starts from the best template that fits: {imitated}")
            on_stage(f"training (run {restart + 1} of {spec.restarts})")

            def report(epoch: int, record: dict[str, float], offset: int = offset) -> None:
                if on_epoch is not None:
                    on_epoch(offset + epoch, record)

            result = trainer.train(splits.train, splits.val, splits.test, on_epoch=report)
            if checkpoints is not None:
                checkpoints.save(restart, controller, result)
        margin = max(margin, result.anchor_margin)
        if best is None or result.selection_key(margin) > best[2].selection_key(margin):
            best = (controller, trainer, result)
    assert best is not None
    return best


def describe_template(mas: MAS) -> str:
    """A template in a few words, for the progress line: "qwen3-8b alone", "8 agents of depth 7 on qwen3-8b"."""
    backbones = ", ".join(dict.fromkeys(agent.backbone for agent in mas.agents))
    return f"{backbones} alone" if len(mas) == 1 else f"{len(mas)} agents of depth {mas.depth()} on {backbones}"


def save_run(
    out: Path,
    controller: Controller,
    spec: BuildSpec,
    catalogs: ControllerCatalogs,
    pools: list[list[str]],
    result: TrainResult,
    roles: RoleSet,
    seconds: float,
) -> None:
    """controller.pt, config.json, metrics.json and training.png; written to temporary names, then renamed."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        config = {
            "version": CHECKPOINT_VERSION,
            "world": spec.world,
            "catalog": spec.catalog,
            "roles": roles.source,
            "role_names": list(roles.names),
            # the library itself, so the run folder works on another machine or after the file changed
            "role_library": {"domain": roles.domain, "roles": [role.model_dump(mode="json") for role in roles]},
            # the backbones as trained on, so loading rebuilds the same pools and features without the world
            "catalogs": catalogs.to_json(),
            "pools": pools,
            "pool_count": len(pools),
            "budget": dataclasses.asdict(spec.budget),
            "controller": dataclasses.asdict(controller.config),  # delta as calibrated on validation
            "train": dataclasses.asdict(spec.train),
            "sizes": list(spec.sizes),
            "task": {"name": spec.task, "data": spec.data, "limit": spec.limit} if spec.task else None,
            "lambdas": result.lambdas,
            "budget_range": result.budget_range.to_json() if result.budget_range is not None else None,
        }
        metrics = {
            "feasible": result.feasible,
            "val": evaluation_json(result.val),
            "test": evaluation_json(result.test),
            "cheapest": evaluation_json(result.cheapest),
            "difficulty_estimator_test": result.difficulty,
            "budget_points": result.points,
            "history": result.history,
            "seconds": round(seconds, 1),
        }
        atomic_write(out / "config.json", json.dumps(config, indent=2))
        atomic_write(out / "metrics.json", json.dumps(metrics, indent=2))
        temporary = out / "controller.pt.tmp"
        torch.save(controller.state_dict(), temporary)
        temporary.replace(out / "controller.pt")
    except OSError as error:
        raise AgentBalanceError(f"cannot write the run folder {out}: {error}") from None
    from agentbalance.plots import plot_training

    plot_training(result.history, spec.budget, out / "training.png")


def read_run_config(folder: Path) -> dict[str, Any]:
    """The config.json of a run folder, checked for its version."""
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise AgentBalanceError(f"{folder} is not a run folder of `agentbalance build` (no config.json)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise AgentBalanceError(f"{config_path}: unreadable run configuration: {error}") from None
    if not isinstance(config, dict) or config.get("version") != CHECKPOINT_VERSION:
        found = config.get("version") if isinstance(config, dict) else None
        raise AgentBalanceError(
            f"{folder}: checkpoint version {found!r} is not supported by this agentbalance "
            f"(expects {CHECKPOINT_VERSION}); rebuild it with `agentbalance build`"
        )
    try:
        _RunConfig.model_validate(config)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:6])
        raise AgentBalanceError(f"{config_path}: the run configuration is damaged ({problems})") from None
    return config


class _RunConfig(BaseModel):
    """The keys of config.json that loading a controller relies on, with their types."""

    model_config = ConfigDict(extra="allow")

    version: int
    world: str
    catalog: str | None
    roles: str | None
    role_names: list[str]
    pools: list[list[str]]
    pool_count: int = Field(ge=1)
    budget: dict[str, float | None]
    controller: dict[str, Any]
    train: dict[str, Any]
    sizes: list[int]
    budget_range: dict[str, Any] | None = None


def run_roles(folder: Path, config: dict[str, Any]) -> RoleSet:
    """The role library a run was trained with, as saved in its config.json."""
    library = config.get("role_library")
    if not isinstance(library, dict):
        return RoleSet.load(config["roles"])
    try:
        roles = [Role.model_validate(role) for role in library["roles"]]
    except (KeyError, TypeError, ValidationError) as error:
        raise AgentBalanceError(f"{folder / 'config.json'}: the saved role library is damaged: {error}") from None
    return RoleSet(roles, library.get("domain"), source=str(folder / "config.json"))


def serving_budget(config: dict[str, Any], budget: Budget | None) -> tuple[Budget, float | None]:
    """The condition budget and difficulty offset a saved controller builds with for the user's budget
    (None: the budget it was built for). Only a budget-conditioned controller adapts to another budget."""
    saved = config.get("budget_range")
    trained = Budget(**config["budget"])
    if saved is None:
        if budget is not None and budget != trained:
            raise AgentBalanceError(
                f"this controller was trained for one budget ({trained.describe()}); to choose the budget at "
                "inference, build it with --budget-conditioned"
            )
        return trained, None
    try:
        budget_range = BudgetRange.from_json(saved)
    except (KeyError, TypeError, ValueError, AssertionError) as error:
        raise AgentBalanceError(f"the run's budget range is damaged: {error}") from None
    return budget_range.serve(budget)


def run_seed(config: dict[str, Any]) -> int:
    """The seed a run was built with: it also drew the world's split, so its test split is this seed's."""
    return int(config["train"].get("seed", 0))


def run_catalogs(folder: Path, config: dict[str, Any]) -> ControllerCatalogs:
    """The catalogs a run was trained on: saved in its config.json (runs of older versions re-derive
    them from the world they name, with the run's own seed)."""
    saved = config.get("catalogs")
    source = str(folder / "config.json")
    if isinstance(saved, dict):
        return ControllerCatalogs(
            Catalog.from_json(saved.get("described"), f"{source} (catalogs.described)"),
            Catalog.from_json(saved.get("pooled"), f"{source} (catalogs.pooled)"),
        )
    named = Catalog.load(config["catalog"]) if config["catalog"] else None
    if str(config["world"]).startswith("replay:"):  # its pools come from the recording's accuracies
        return ControllerCatalogs.of_world(open_world(config["world"], named, seed=run_seed(config)))
    catalog = named or Catalog.load()
    return ControllerCatalogs(catalog, catalog)


def load_controller(
    folder: Path,
    catalogs: ControllerCatalogs | None = None,
    roles: RoleSet | None = None,
    encoder: TextEncoder | None = None,
) -> tuple[Controller, dict[str, Any]]:
    """A saved controller with the pools and backbone features it was trained on. Over `catalogs` with
    other backbones (inductive use), the pools and features are built afresh from them; catalogs with the
    run's backbones (the same world, say with another seed or today's prices) keep the trained ones."""
    config = read_run_config(folder)
    roles = roles or run_roles(folder, config)
    if list(roles.names) != config["role_names"]:
        raise AgentBalanceError(
            f"{folder}: the controller was trained on roles {config['role_names']}, not {list(roles.names)}"
        )
    trained = run_catalogs(folder, config)
    if catalogs is None or set(catalogs.described.names) == set(trained.described.names):
        catalogs = trained
    pools = build_pools(catalogs.pooled, k=config["pool_count"], seed=config["train"]["seed"])
    if catalogs is trained and pools.pools != config["pools"]:
        raise AgentBalanceError(
            f"{folder}: its saved catalogs no longer give the pools it was trained with; rebuild it with "
            "`agentbalance build`"
        )
    context = ControllerContext.build(catalogs.described, pools, roles, encoder or TextEncoder())
    try:
        controller_config = ControllerConfig(**config["controller"])
    except TypeError as error:
        raise AgentBalanceError(
            f"{folder / 'config.json'}: the saved controller settings are damaged: {error}"
        ) from None
    controller = Controller(context, controller_config)
    try:
        state = torch.load(folder / "controller.pt", map_location="cpu", weights_only=True)
        controller.load_state_dict(state)
    except Exception as error:  # a damaged file can fail torch.load in any way: each means "damaged"
        detail = (str(error).splitlines() or [type(error).__name__])[0][:160]
        raise AgentBalanceError(
            f"{folder / 'controller.pt'}: cannot load the controller (damaged, or not a checkpoint of "
            f"agentbalance build): {detail}"
        ) from None
    controller.eval()
    return controller, config
