"""`TrainedController`: a run folder of `agentbalance build` as one object that constructs, runs and evaluates MAS.

Every user of a trained controller (the CLI, the AutoGen adapter, the curve's agentbalance method, `serve`)
goes through it; none of them reads the run folder or the trainer's internals. It never trains.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import (
    ExperimentSpec,
    experiment_splits,
    experiment_task,
    resolve_world,
    world_catalogs,
)
from agentbalance.mas import MAS
from agentbalance.measuring import CONFIDENCE_Z, Evaluation, summarise
from agentbalance.policy.budget_input import budget_condition
from agentbalance.policy.context import ControllerCatalogs
from agentbalance.policy.controller import Controller
from agentbalance.query import Message, Query, as_query
from agentbalance.roles import RoleSet
from agentbalance.run_folder import RunConfig, load_controller, run_catalogs, run_roles
from agentbalance.runtime.execution import Caps, Grader
from agentbalance.runtime.rollout import Outcome, execute
from agentbalance.runtime.runner import Runner
from agentbalance.runtime.trace import Trace
from agentbalance.task_rules import TaskRules
from agentbalance.tasks.base import Task
from agentbalance.worlds import JudgeSpec, LiveOptions
from agentbalance.worlds.base import RecordedWorld, SameAnswer, World, query_for

SPLITS = ("train", "val", "test", "all")
# how a Python caller names a replay world's recorded questions (`query_for`'s hint)
RECORDED_QUERIES_HINT = (
    "pass them as Query objects with their recorded ids (`world.queries(split)` lists them), not as question texts"
)


class TrainedController:
    """A saved controller with the roles, backbones and budget it was trained for.

    `construct` builds the MAS of one query (a text or a Query), `construct_many` a batch (one forward
    pass: the fast path), `run` executes them in a world (by default the one it was trained in) and
    `evaluate` measures it on a split of a world. A budget-conditioned controller takes `budget=` within
    its range; any other controller serves the budget it was built for.
    """

    def __init__(
        self,
        controller: Controller,
        roles: RoleSet,
        budget: Budget,
        budget_range: BudgetRange | None = None,
        encoder: TextEncoder | None = None,
        origin: tuple[Path, RunConfig] | None = None,
        plans: Sequence[MAS | None] = (),
    ) -> None:
        """A controller just trained (`origin` None: it has no run folder yet) or loaded from `origin`. `plans`: per
        target budget (the range's grid, tightest first; or the one budget), the plan that serves it in place of
        the trained policy (`train.menu_guard`; None or absent: the policy)."""
        self.controller = controller
        self.plans = tuple(plans)
        self.roles = roles
        self.budget = budget  # the budget it was built for (budget-conditioned: the loosest of its range)
        self.budget_range = budget_range
        self.encoder = encoder or TextEncoder()
        self._origin = origin
        self._described: Catalog | None = None  # the catalog its backbone features come from (None: as trained)

    @property
    def run_dir(self) -> Path:
        return self._saved()[0]

    @property
    def config(self) -> RunConfig:
        """The run folder's config.json, typed."""
        return self._saved()[1]

    def _saved(self) -> tuple[Path, RunConfig]:
        if self._origin is None:
            raise AgentBalanceError("this controller has no run folder (it was trained in this process, not loaded)")
        return self._origin

    @classmethod
    def load(
        cls,
        run_dir: str | Path,
        *,
        world: World | None = None,
        catalog: Catalog | None = None,
        roles: RoleSet | None = None,
        encoder: TextEncoder | None = None,
    ) -> TrainedController:
        """The controller of a run folder. Over `world`'s (or `catalog`'s) backbones when they differ from
        the trained ones (inductive use: pools and features are built afresh); `roles` with the trained
        role names (e.g. an AutoGen team's agents)."""
        folder = Path(run_dir)
        catalogs = None
        if world is not None:
            catalogs = world_catalogs(world)
        elif catalog is not None:
            catalogs = ControllerCatalogs(catalog, catalog)
        encoder = encoder or TextEncoder()
        controller, config = load_controller(folder, catalogs, roles, encoder)
        roles = roles or run_roles(folder, config)
        plans = [MAS.from_json(plan, f"{folder / 'config.json'}: plans") if plan else None for plan in config.plans]
        trained = {name for pool in config.pools for name in pool} | set(config.complements)
        if set(controller.context.backbone_names) != trained:
            plans = []  # other backbones (inductive use): the plans were chosen among the trained ones
        loaded = cls(controller, roles, config.trained_budget, config.saved_range(), encoder, (folder, config), plans)
        loaded._described = catalogs.described if catalogs is not None else None
        return loaded

    # ---- what it was trained for

    def serving(self, budget: Budget | None = None) -> tuple[Budget, float | None]:
        """The condition budget and difficulty offset it builds with for `budget` (None: the budget it was
        built for). Only a budget-conditioned controller adapts to another budget, within its range."""
        if self.budget_range is None:
            if budget is not None and budget != self.budget:
                raise AgentBalanceError(
                    f"this controller was trained for one budget ({self.budget.describe()}); to choose the "
                    "budget at inference, build it with --budget-conditioned"
                )
            return self.budget, None
        return self.budget_range.serve(budget)

    def plan_for(self, budget: Budget | None = None) -> MAS | None:
        """The plan that serves `budget` for every query in place of the trained policy (`train.menu_guard`), or None.
        Between two grid budgets of a range, the tighter one's choice (what it serves fits the budget asked)."""
        if not self.plans:
            return None
        if self.budget_range is None:
            return self.plans[-1]
        scale = self.budget_range.scale_of(budget) if budget is not None else 1.0
        at_or_below = [i for i, grid in enumerate(self.budget_range.scales()) if grid <= scale * (1 + 1e-9)]
        return self.plans[at_or_below[-1]] if at_or_below and len(self.plans) == self.budget_range.steps else None

    def cheapest_shift(self, budget: Budget | None = None) -> float:
        """The shift of its difficulty offset (<= 0) that builds every query, however hard, in the cheapest pool at
        `budget`: the span of a served model's budget governor (0 when every query is built there already)."""
        selection = self.controller.selection
        if selection.pool_count == 1 or self.plan_for(budget) is not None:  # a plan's cost does not move with δ
            return 0.0
        served, delta = self.serving(budget)
        offset = self.controller.config.delta if delta is None else delta
        with torch.no_grad():
            hardest = selection.effective_difficulty(torch.ones(1), budget_condition(served, 1), offset)
            first_threshold = selection.thresholds()[0]
        return min(0.0, float(first_threshold - hardest[0]) - 2 * selection.temperature)

    @property
    def delta(self) -> float:
        """The difficulty offset it serves its own budget with (calibrated on validation by `build`)."""
        _, delta = self.serving(None)
        return self.controller.config.delta if delta is None else delta

    @property
    def seed(self) -> int:
        return self.config.run_seed

    @property
    def backbones(self) -> tuple[str, ...]:
        """The backbones it chooses among (the Pareto-kept ones, cheapest pool first)."""
        return self.controller.context.backbone_names

    def catalog(self) -> Catalog:
        """The catalog that describes the backbones it chooses among (prices, profiles)."""
        return self._described or run_catalogs(self.run_dir, self.config).described

    def over(self, world: World) -> TrainedController:
        """This controller over `world`'s backbones: itself when they are its own, else re-pooled from them."""
        if set(world.catalog.names) == set(self.catalog().names):
            return self
        return TrainedController.load(self.run_dir, world=world, roles=self.roles, encoder=self.encoder)

    # ---- constructing

    def construct(self, query: str | Query | Sequence[Message], budget: Budget | None = None) -> MAS:
        """The MAS for one query (its text, a conversation whose last message is the question, or a Query): the
        greedy choice of every stage."""
        (mas,) = self.construct_many([query], budget)
        return mas

    def construct_many(
        self,
        queries: Sequence[str | Query | Sequence[Message]],
        budget: Budget | None = None,
        *,
        delta_shift: float = 0.0,
    ) -> list[MAS]:
        """The MAS for each query, in one batched forward pass (a MAS built for a Query carries its id).
        `delta_shift` (< 0: cheaper pools) moves the difficulty offset it serves `budget` with, as a served model's
        budget governor does; it moves nothing where a plan serves `budget` (`plan_for`)."""
        asked = [as_query(query) for query in queries]
        if not asked:
            return []
        embeddings = torch.from_numpy(self.encoder.encode([q.render() for q in asked]).copy())
        ids = [query.id if isinstance(query, Query) else None for query in queries]
        return self.construct_embedded(embeddings, ids, budget, delta_shift=delta_shift)

    def construct_embedded(
        self,
        embeddings: torch.Tensor,
        query_ids: Sequence[str | None],
        budget: Budget | None = None,
        *,
        delta_shift: float = 0.0,
    ) -> list[MAS]:
        """`construct_many` from query embeddings already computed (an experiment's cache)."""
        served, delta = self.serving(budget)
        plan = self.plan_for(budget)
        if plan is not None:
            return [plan.for_query(query_id) for query_id in query_ids]
        condition = budget_condition(served, len(query_ids))
        if delta_shift:
            delta = (self.controller.config.delta if delta is None else delta) + delta_shift
        return self.controller.construct(embeddings, condition, list(query_ids), delta=delta)

    # ---- running and evaluating

    def open_world(
        self, world: str | None = None, *, seed: int | None = None, live: LiveOptions | None = None
    ) -> tuple[World, Task | None]:
        """The world it was trained in (or `world`, a `--world` value), with the run's task if it had one."""
        opened, _, _, task = resolve_world(self.experiment_spec(world, seed=seed, live=live))
        return opened, task

    def experiment_spec(
        self,
        world: str | None = None,
        *,
        catalog: str | None = None,
        seed: int | None = None,
        task: str | None = None,
        data: str | None = None,
        limit: int | None = None,
        live: LiveOptions | None = None,
        judge: JudgeSpec | None = None,
    ) -> ExperimentSpec:
        """The experiment it was built on, with what the caller changes: another world (a replay world then
        brings its own catalog; the simulator and a live endpoint keep the run's, unless `catalog` names one),
        seed, task (then `data`/`limit` are that task's), or judge (a live world's default: the run's own)."""
        saved = self.config.task
        if task is None and saved is not None:  # the run's own task, with what the caller overrides
            task = saved.name
            data = saved.data if data is None else data
            limit = saved.limit if limit is None else limit
        opened = world or self.config.world
        if judge is None and self.config.judge is not None and opened == "live":
            judge = JudgeSpec(**self.config.judge)  # type: ignore[arg-type]
        return ExperimentSpec(
            world=opened,
            catalog=catalog or self.config.catalog_for(world),
            sizes=self.config.split_sizes,
            task=task,
            data=data,
            limit=limit,
            live=live,
            judge=judge,
            seed=self.seed if seed is None else seed,
        )

    def run(
        self,
        queries: Sequence[str | Query | Sequence[Message]],
        world: World | None = None,
        *,
        budget: Budget | None = None,
        caps: Caps | None = None,
        concurrency: int = 32,
        grader: Grader | None = None,
        same_answer: SameAnswer | None = None,
    ) -> list[Trace]:
        """Construct each query's MAS and execute it (a query is a text, a conversation (a list of chat messages whose
        last is the user's question) or a Query; a replay world's are Queries with its recorded ids, looked up by
        `query_for`; default world: the one it was trained in). Graded by `grader`, else (in the default world) by
        the run's task when it had one, else by the world; conditional agents compare answers by `same_answer`, else
        by the task's rule, else by the world's (`TaskRules`)."""
        task = None
        if world is None:
            world, task = self.open_world()
        asked = [query_for(world, query, hint=RECORDED_QUERIES_HINT) for query in queries]
        controller = self.over(world)
        systems = controller.construct_many(asked, budget)
        own = TaskRules.of(task, world, self.encoder)
        rules = TaskRules(grader or own.grader, same_answer or own.same_answer)
        runner = controller.runner(world, rules, caps=caps, concurrency=concurrency)
        return runner.run_sync(list(zip(systems, asked, strict=True)))

    def runner(
        self, world: World, rules: TaskRules | None = None, *, caps: Caps | None = None, concurrency: int = 32
    ) -> Runner:
        """The runner `run` executes its MAS with, for callers that run them themselves (`serve`, in its own
        event loop): answers graded and compared by `rules` (default: the world's, `TaskRules.of(None, world)`)."""
        rules = rules or TaskRules.of(None, world, self.encoder)
        return Runner(world, self.roles, concurrency, caps, rules.grader, rules.same_answer)

    def evaluate(
        self,
        world: World | str | None = None,
        split: str = "test",
        *,
        budget: Budget | None = None,
        spec: ExperimentSpec | None = None,
    ) -> Evaluation:
        """Perf (over the graded queries), Tok and Lat of the controller on a split of a world: by default
        the test split of the world it was trained in; `split="all"` takes every question of the world (a
        new data set). `spec` gives another experiment (world, seed, task); a World object is used as is."""
        systems, outcomes = self.outcomes(world, split, budget=budget, spec=spec)
        return summarise(systems, outcomes, CONFIDENCE_Z)

    def outcomes(
        self,
        world: World | str | None = None,
        split: str = "test",
        *,
        budget: Budget | None = None,
        spec: ExperimentSpec | None = None,
    ) -> tuple[list[MAS], list[Outcome]]:
        """What `evaluate` summarises, query by query (paired comparisons need them, not only the means)."""
        if split not in SPLITS:
            raise AgentBalanceError(f"unknown split {split!r}; use {', '.join(SPLITS)}")
        spec = spec or self.experiment_spec(world if isinstance(world, str) else None)
        if isinstance(world, World):
            opened, task = world, experiment_task(spec)
        else:
            opened, _, _, task = resolve_world(spec)
        queries = every_question(opened, task) if split == "all" else []
        if not queries:  # a split, or all of the simulator's (its questions are drawn at the run's sizes)
            splits = experiment_splits(spec, opened, task)
            queries = splits.train + splits.val + splits.test if split == "all" else splits.get(split)
        controller = self.over(opened)
        systems = controller.construct_many(queries, budget)
        rules = TaskRules.of(task, opened, self.encoder)
        pairs = list(zip(systems, queries, strict=True))
        return systems, execute(opened, controller.roles, pairs, rules.grader, same_answer=rules.same_answer)


def every_question(world: World, task: Task | None) -> list[Query]:
    """Every question a task or a replay world holds, whatever the run's split sizes (`evaluate --split all`:
    a controller on a whole new data set); empty for the simulator, whose questions are drawn, not held."""
    if task is not None:
        return list(task.items())
    if isinstance(world, RecordedWorld):
        return [query for name in ("train", "val", "test") for query in world.queries(name)]
    return []
