"""`agentbalance build` as a function: pools, difficulty pretraining, REINFORCE to a budget, a saved run folder.

Everything a later `run`/`evaluate` needs is written to the run folder; nothing depends on the process state.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.errors import AgentBalanceError
from agentbalance.executors import ExecutorSpec
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.mas import MAS
from agentbalance.measuring import cheapest_mas, measure
from agentbalance.policy.controller import Controller, ControllerConfig
from agentbalance.policy.sampling import seeded
from agentbalance.roles import RoleSet
from agentbalance.run_folder import save_run
from agentbalance.splits import Splits
from agentbalance.train.anchor import AnchorPlan
from agentbalance.train.budget_targeting import selection_key
from agentbalance.train.checkpoints import RestartCheckpoint, RestartCheckpoints
from agentbalance.train.config import TrainConfig, TrainResult
from agentbalance.train.menu_guard import apply_guard
from agentbalance.train.reinforce import Trainer
from agentbalance.train.training_run import TrainingRun
from agentbalance.worlds import absolute_world_spec, judge_of
from agentbalance.worlds.judge import JudgeStats


@dataclass(frozen=True)
class BuildSpec:
    """What the user asked for: the experiment to stand on, and how to train on it."""

    experiment: ExperimentSpec = field(default_factory=ExperimentSpec)
    budget: Budget = field(default_factory=Budget)
    train: TrainConfig = field(default_factory=TrainConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    restarts: int = 3  # independent training runs; the best on validation is kept
    anchored: bool = True  # the first restart starts from the best plan that fits each budget (Trainer.anchor)
    budget_range: BudgetRange | None = None  # budget-conditioned: one controller for every budget of the range

    @property
    def seed(self) -> int:
        return self.experiment.seed

    @property
    def trained_for(self) -> Budget | BudgetRange:
        """The budget range when budget-conditioned, else the one budget."""
        return self.budget_range if self.budget_range is not None else self.budget


@dataclass
class Built:
    """A trained controller with everything needed to use it."""

    controller: Controller
    trainer: Trainer
    result: TrainResult
    splits: Splits
    out: Path
    restored: list[int] = field(default_factory=list)  # restarts resumed from checkpoints of a killed build
    trained_elsewhere: str | None = None  # where restarts trained in parallel ("on a local Ray (2 CPUs): 3 runs")
    judge: JudgeStats | None = None  # what the judge's grading cost in this process (--judge), apart from the MAS


def build(
    spec: BuildSpec,
    out: Path,
    roles: RoleSet | None = None,
    on_stage: Callable[[str], None] = lambda stage: None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
    executor: ExecutorSpec | None = None,
    on_note: Callable[[str], None] = lambda note: None,
) -> Built:
    """Open the experiment, train on it, save the run folder (resuming from its restart checkpoints).

    With an executor that is not this process (Ray), the restarts train there in parallel first. `on_note` gets
    what the user should know before training (a split of which only some questions can be graded)."""
    started = time.perf_counter()
    checkpoints = RestartCheckpoints(out / "checkpoints", build_fingerprint(spec))
    elsewhere = None
    if executor is not None and not executor.in_process:
        elsewhere = train_restarts_elsewhere(spec, roles, checkpoints, executor, on_stage)
    with one_torch_thread():
        experiment = Experiment.open(spec.experiment, roles, on_stage)
        for note in refuse_ungradable(experiment):
            on_note(note)
        refuse_unreachable(experiment, spec.budget_range.loosest if spec.budget_range is not None else spec.budget)
        controller, trainer, result = train_on(experiment, spec, on_stage, on_epoch, checkpoints)
        seconds = time.perf_counter() - started
        config, metrics = run_documents(controller, spec, experiment, result, seconds)
        save_run(out, controller, config, metrics)
    from agentbalance.plots import plot_training

    kept = (result.kept_epoch, {"perf": result.val.perf, "tok": result.val.tok, "lat": result.val.lat})
    title = f"validation per epoch of the run kept; {result.describe_kept(spec.restarts)}"
    plot_training(result.history, spec.budget, out / "training.png", kept, title)
    judge = judge_of(experiment.world)
    stats = judge.stats if judge is not None else None
    return Built(controller, trainer, result, experiment.splits, out, checkpoints.restored, elsewhere, stats)


def refuse_ungradable(experiment: Experiment) -> list[str]:
    """Refuse, before any training, training or validation questions of which none can be graded (no gold answer
    and no recorded grade): the reward and every Perf would be means over nothing. Returns a note per split of which
    only some can be graded, with the count, since Perf and the budgets' choices then rest on those alone. Counted
    by answering each question with the cheapest MAS (the calls training makes anyway; a live world caches them)."""
    cheapest = cheapest_mas(experiment)
    notes = []
    for name in ("train", "val"):
        questions = experiment.splits.get(name)
        graded = measure(experiment, [cheapest] * len(questions), questions).n_graded or 0
        what = "training" if name == "train" else "validation"
        if graded == 0:
            raise AgentBalanceError(
                f"none of the {len(questions)} {what} questions can be graded (they have no gold answer, and the "
                "world records no grade for them), so there is nothing to train or choose by; give the questions "
                "their answers (an `answer` field in a query file), or record a world that grades them"
            )
        if graded < len(questions):
            notes.append(
                f"warning: only {graded} of the {len(questions)} {what} questions can be graded (the others have no "
                f"gold answer): Perf{' and the reward' if name == 'train' else ''} rest on those {graded}"
            )
    return notes


def refuse_unreachable(experiment: Experiment, budget: Budget) -> None:
    """Refuse, before any training, a budget that no kept backbone alone meets even on average on the validation
    questions: the cheapest MAS is one agent on one backbone, so nothing can fit, and training would only end in
    "budget NOT feasible". (A budget between a backbone's mean and its upper bound is left to `build`, which reports
    whether the upper bound fits.)"""
    if budget.tok is None and budget.lat is None:
        return
    val, names = experiment.splits.val, experiment.context.backbone_names
    alone = {
        name: measure(experiment, [MAS.single(experiment.roles.decision.name, name)] * len(val), val) for name in names
    }
    if any(evaluation.meets(budget, upper=False) for evaluation in alone.values()):
        return
    cheapest, fastest = min(names, key=lambda n: alone[n].tok), min(names, key=lambda n: alone[n].lat)
    raise AgentBalanceError(
        f"budget {budget.describe()} is below every reachable point: no backbone alone meets it on the validation "
        f"questions (the cheapest, {cheapest}, costs Tok {alone[cheapest].tok:.4g} USD/100 queries; the fastest, "
        f"{fastest}, takes Lat {alone[fastest].lat:.3g} s), so nothing was trained; raise the budget"
    )


def holds_another_build(out: Path, spec: BuildSpec) -> bool:
    """Whether `out` holds a finished controller that a build of `spec` would replace: one whose restart
    checkpoints are of other options, or that has none (a rerun with the same options resumes instead)."""
    if not (out / "controller.pt").exists():
        return False
    fingerprints = set()
    for saved in (out / "checkpoints").glob("restart-*.json"):
        try:
            fingerprints.add(json.loads(saved.read_text(encoding="utf-8")).get("fingerprint"))
        except (OSError, ValueError, AttributeError):  # unreadable: not a checkpoint of these options
            continue
    return build_fingerprint(spec) not in fingerprints


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
    best: tuple[Controller, Trainer, TrainResult] | None = None
    margin = 0.0  # the anchored first restart's: every trained policy must beat the anchored start by it
    menu = None  # the anchored start's measured menu, which the menu guard reuses
    for restart in range(spec.restarts):
        saved = checkpoints.load(restart) if checkpoints is not None else None
        if saved is not None:
            on_stage(f"run {restart + 1} of {spec.restarts} restored from its checkpoint")
            controller, trainer = restart_controller(experiment, spec, restart)
            result = trainer.restore(saved)
            for epoch, record in enumerate(result.history):
                if on_epoch is not None:
                    on_epoch(restart * spec.train.epochs + epoch, record)
        else:
            controller, trainer, result = train_restart(experiment, spec, restart, on_stage, on_epoch)
            if checkpoints is not None:
                checkpoints.save(restart, controller, result)
        result.kept_run = restart + 1
        margin = max(margin, result.anchor_margin)
        if trainer.anchored is not None:
            menu = trainer.anchored.menu
        if best is None or _selection_key(result, margin) > _selection_key(best[2], margin):
            best = (controller, trainer, result)
    assert best is not None
    if spec.train.menu_guard:
        on_stage("comparing the trained policy with the best plan of the menu on held-out folds")
        apply_guard(best[1].run, best[2], experiment.splits, menu)
    return best


def restart_controller(experiment: Experiment, spec: BuildSpec, restart: int) -> tuple[Controller, Trainer]:
    """Restart `restart`'s initial controller and its trainer: a function of the spec and the index alone."""
    with seeded(spec.seed + 1000 * restart):  # the initial weights; torch's global random state is left alone
        controller = Controller(experiment.context, spec.controller)
    run = TrainingRun.of(experiment, controller, spec.trained_for, spec.train, seed=spec.seed + restart)
    return controller, Trainer(run)


def train_restart(
    experiment: Experiment,
    spec: BuildSpec,
    restart: int,
    on_stage: Callable[[str], None] = lambda stage: None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
) -> tuple[Controller, Trainer, TrainResult]:
    """One training restart: independent of the others (its seeds come from its index), so restarts may
    run anywhere, in any order, and give the controllers of a sequential build."""
    splits = experiment.splits
    controller, trainer = restart_controller(experiment, spec, restart)
    on_stage(f"pretraining the difficulty estimator (run {restart + 1} of {spec.restarts})")
    trainer.pretrain_difficulty(splits.train)
    if spec.anchored and restart == 0:
        plans = trainer.anchor(splits.train, splits.val)
        imitated = ", ".join(dict.fromkeys(describe_plan(plan) for plan in plans))
        if imitated:
            on_stage(f"run 1 starts from the best template that fits: {imitated}")
    on_stage(f"training (run {restart + 1} of {spec.restarts})")
    offset = restart * spec.train.epochs

    def report(epoch: int, record: dict[str, float]) -> None:
        if on_epoch is not None:
            on_epoch(offset + epoch, record)

    result = trainer.train(splits.train, splits.val, splits.test, on_epoch=report)
    return controller, trainer, result


def train_restarts_elsewhere(
    spec: BuildSpec,
    roles: RoleSet | None,
    checkpoints: RestartCheckpoints,
    executor: ExecutorSpec,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> str | None:
    """Train the restarts without a checkpoint as units of `executor` (Ray tasks), saving each checkpoint as
    it arrives; `train_on` then restores them all, exactly as it resumes a killed build. Returns where and
    how many trained (None: every restart had a checkpoint)."""
    missing = [restart for restart in range(spec.restarts) if not checkpoints.exists(restart)]
    if not missing:
        return None
    with executor.open() as running:
        where = f"{len(missing)} of {spec.restarts} runs trained {running.description()}"
        on_stage(f"training {len(missing)} runs {running.description()}")
        for finished, (index, checkpoint) in enumerate(
            running.map(functools.partial(_remote_restart, spec, roles), missing), start=1
        ):
            checkpoints.save_trained_elsewhere(missing[index], checkpoint)
            on_stage(f"run {missing[index] + 1} of {spec.restarts} trained ({finished} of {len(missing)} done)")
    return where


def _remote_restart(spec: BuildSpec, roles: RoleSet | None, restart: int) -> RestartCheckpoint:
    """One restart in a worker: its own experiment (the caches on disk make opening it quick), one torch thread."""
    with one_torch_thread():
        experiment = Experiment.open(spec.experiment, roles)
        controller, _, result = train_restart(experiment, spec, restart)
    return RestartCheckpoint(controller.state_dict(), controller.config, result)


def _selection_key(result: TrainResult, margin: float) -> tuple[int, float]:
    """A restart's `budget_score` on validation with the one-standard-error rule (`selection_key`)."""
    return selection_key(result.score, result.anchored, margin)


def describe_template(mas: MAS) -> str:
    """A template in a few words, for the progress line: "qwen3-8b alone", "8 agents of depth 7 on qwen3-8b"."""
    backbones = ", ".join(dict.fromkeys(agent.backbone for agent in mas.agents))
    return f"{backbones} alone" if len(mas) == 1 else f"{len(mas)} agents of depth {mas.depth()} on {backbones}"


def describe_plan(plan: AnchorPlan) -> str:
    """A plan in a few words: a template's, or "qwen3-8b alone; the hardest 30% -> gpt-4o alone"."""
    if not plan.mixed:
        return describe_template(plan.easy)
    return f"{describe_template(plan.easy)}; the hardest {plan.hard_share:.0%} -> {describe_template(plan.hard)}"


def run_documents(
    controller: Controller, spec: BuildSpec, experiment: Experiment, result: TrainResult, seconds: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """config.json (what loading the controller needs, see `RunConfig`) and metrics.json of a build."""
    roles, task = experiment.roles, spec.experiment
    config = {
        # absolute paths: `run`, `evaluate` and `serve` reopen this world from any working directory
        "world": absolute_world_spec(task.world),
        "catalog": str(Path(task.catalog).resolve()) if task.catalog else None,
        "roles": roles.source,
        "role_names": list(roles.names),
        # the library itself, so the run folder works on another machine or after the file changed
        "role_library": {"domain": roles.domain, "roles": [role.model_dump(mode="json") for role in roles]},
        # the backbones as trained on, so loading rebuilds the same pools and features without the world
        "catalogs": experiment.catalogs.to_json(),
        "pools": experiment.pools.pools,
        "pool_count": len(experiment.pools.pools),
        "complements": experiment.pools.complements,
        "budget": dataclasses.asdict(spec.budget),
        "controller": dataclasses.asdict(controller.config),  # delta as calibrated on validation
        "train": dataclasses.asdict(spec.train),
        "seed": spec.seed,
        "sizes": list(task.sizes),
        "task": {"name": task.task, "data": str(Path(task.data).resolve()) if task.data else None, "limit": task.limit}
        if task.task
        else None,
        "lambdas": result.lambdas,
        "budget_range": result.budget_range.to_json() if result.budget_range is not None else None,
        "plans": result.plans,  # per target budget: the plan serving it in place of the policy (null: the policy)
        "judge": dataclasses.asdict(task.judge) if task.judge is not None else None,  # `evaluate` grades with it too
    }
    metrics = {
        "feasible": result.feasible,
        "val": result.val.to_json(),
        # the anchored start kept: its budget was judged by this (Perf on validation, cost on train + val)
        "judged": result.judged.to_json() if result.judged is not None else None,
        "test": result.test.to_json(),
        "cheapest": result.cheapest.to_json(),
        "difficulty_estimator_test": result.difficulty,
        "budget_points": result.points,
        "menu_guard": result.guard,
        "history": result.history,  # the kept run's epochs
        "kept_run": result.kept_run,  # the training run (restart) kept, 1-based
        "kept_epoch": result.kept_epoch,  # its epoch whose weights are kept; 0: the anchored start
        "seconds": round(seconds, 1),
        # the judge's own calls in this process (Ray workers' are not counted), apart from the MAS's costs
        "judge": dataclasses.asdict(judge.stats) if (judge := judge_of(experiment.world)) is not None else None,
    }
    return config, metrics


def build_fingerprint(spec: BuildSpec) -> str:
    """A digest of every option that changes what a build trains (not how calls are transported)."""
    live = spec.experiment.live
    untransported = dataclasses.replace(spec, experiment=dataclasses.replace(spec.experiment, live=None))
    options = dataclasses.asdict(untransported)
    options["live_base_url"] = live.base_url if live is not None else None
    return hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()
