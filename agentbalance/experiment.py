"""One experiment's fixed ground: the world, its pools, the role library, the splits and the query embeddings.

`build` and every method of a `curve` sweep stand on the same Experiment, so they see the same test
questions and are charged by the same accounting. It must never import training: it is what training stands on.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerCatalogs, ControllerContext
from agentbalance.pooling import AloneOnTraining, PoolingResult, build_pools, complementary_backbones
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.rollout import Outcome, execute
from agentbalance.splits import Splits, task_splits, world_splits
from agentbalance.task_rules import TaskRules
from agentbalance.tasks.base import Task
from agentbalance.worlds import JudgeSpec, LiveOptions, judged, open_task, open_world
from agentbalance.worlds.base import RecordedWorld, SyncWorld, World, pooled_catalog


@dataclass(frozen=True)
class ExperimentSpec:
    """Where an experiment's questions and calls come from, and the one seed of every random choice."""

    world: str = "sim"
    catalog: str | None = None
    roles: str | None = None
    sizes: tuple[int, int, int] = (600, 200, 400)
    pools: int | None = None
    task: str | None = None  # take the questions from a task (its loader and scorer) instead of the world's
    data: str | None = None
    limit: int | None = None
    live: LiveOptions | None = None
    judge: JudgeSpec | None = None  # grade every answer with an LLM judge (a live world's questions without gold)
    complements: bool = True  # pool dominated backbones whose cascades pay on the training split (free worlds)
    seed: int = 0


def world_catalogs(world: World) -> ControllerCatalogs:
    """The backbones of a world as a controller sees them: described by the catalog, pooled by `pooled_catalog`."""
    return ControllerCatalogs(world.catalog, pooled_catalog(world))


def task_roles(task: Task) -> str:
    """The shipped role library of a task's domain."""
    return task.domain if task.domain in ("general", "math", "code") else "mixed"


def experiment_task(spec: ExperimentSpec) -> Task | None:
    """The task named by the spec (its questions and scorer), if any."""
    return open_task(spec.task, spec.data, spec.limit, spec.seed) if spec.task else None


def resolve_world(spec: ExperimentSpec) -> tuple[World, ControllerCatalogs, RoleSet, Task | None]:
    """The world, the catalogs the controller sees, the role library, and the task if one is named."""
    task = experiment_task(spec)
    live = spec.live or LiveOptions()
    if task is not None:
        live = dataclasses.replace(live, parse=task.parse)
    catalog = Catalog.load(spec.catalog) if spec.catalog else None
    world = judged(open_world(spec.world, catalog, seed=spec.seed, live=live), spec.judge, live, spec.seed)
    if not isinstance(world, SyncWorld) and task is None:
        raise AgentBalanceError(
            f"training in the {spec.world!r} world needs --task NAME: its scorer grades the answers"
        )
    own_roles = world.default_roles if isinstance(world, RecordedWorld) else None
    default_roles = own_roles or (task_roles(task) if task else "mixed")
    return world, world_catalogs(world), RoleSet.load(spec.roles or default_roles), task


def experiment_splits(spec: ExperimentSpec, world: World, task: Task | None) -> Splits:
    """The task's items split by hash when a task is named, else the world's own fixed splits."""
    if task is not None:
        return task_splits(list(task.items()), spec.sizes, spec.seed)
    return world_splits(world, spec.sizes, seed=spec.seed)


def experiment_pools(
    spec: ExperimentSpec,
    world: World,
    catalogs: ControllerCatalogs,
    roles: RoleSet,
    train: Sequence[Query],
    task: Task | None,
) -> PoolingResult:
    """The Pareto-kept backbones and, where calls are free (simulated, replay), the dominated ones whose
    cascades raise the training split's frontier (`complementary_backbones`), pooled by k-medoids. A live
    world is never asked: every dominated backbone would cost a call per training question."""
    pools = build_pools(catalogs.pooled, k=spec.pools, seed=spec.seed)
    if not spec.complements or not isinstance(world, SyncWorld) or not pools.dominated_by:
        return pools
    names = list(catalogs.pooled.names)
    decision = roles.decision.name
    pairs = [(MAS.single(decision, name), query) for name in names for query in train]
    rules = TaskRules.of(task, world)
    outcomes = execute(world, roles, pairs, rules.grader, same_answer=rules.same_answer)
    n = len(train)
    alone = {name: _alone(outcomes[i * n : (i + 1) * n]) for i, name in enumerate(names)}
    complements = complementary_backbones(alone, pools.kept, train, rules.same_answer)
    if not complements:
        return pools
    return build_pools(catalogs.pooled, k=spec.pools, seed=spec.seed, complements=complements)


def _alone(outcomes: Sequence[Outcome]) -> AloneOnTraining:
    return AloneOnTraining(
        [o.answer or None for o in outcomes],
        np.array([0.0 if o.score is None else o.score for o in outcomes]),
        np.array([o.cost_usd for o in outcomes]),
        np.array([o.latency_s for o in outcomes]),
    )


def embed_queries(encoder: TextEncoder, queries: Sequence[Query]) -> dict[str, torch.Tensor]:
    """Query embeddings by id (the controller sees the rendered question and choices, nothing else)."""
    vectors = encoder.encode([q.render() for q in queries])
    return {q.id: torch.from_numpy(v.copy()) for q, v in zip(queries, vectors, strict=True)}


@dataclass
class Experiment:
    """Everything a method needs to train on `splits.train` and be measured on `splits.test`."""

    world: World
    catalogs: ControllerCatalogs  # the backbones as the controller sees them (described, pooled)
    roles: RoleSet
    task: Task | None
    pools: PoolingResult
    context: ControllerContext
    splits: Splits
    embeddings: dict[str, torch.Tensor]  # query id -> sentence embedding of the rendered question
    encoder: TextEncoder
    seed: int

    @classmethod
    def open(
        cls,
        spec: ExperimentSpec,
        roles: RoleSet | None = None,
        on_stage: Callable[[str], None] = lambda stage: None,
    ) -> Experiment:
        on_stage("loading the world and building pools")
        world, catalogs, default_roles, task = resolve_world(spec)
        roles = roles or default_roles
        splits = experiment_splits(spec, world, task)
        pools = experiment_pools(spec, world, catalogs, roles, splits.train, task)
        encoder = TextEncoder()
        context = ControllerContext.build(catalogs.described, pools, roles, encoder)
        on_stage("embedding the questions")
        embeddings = embed_queries(encoder, splits.train + splits.val + splits.test)
        return cls(world, catalogs, roles, task, pools, context, splits, embeddings, encoder, spec.seed)

    @functools.cached_property
    def rules(self) -> TaskRules:
        """How its answers are graded and compared: the task's rules, else the world's."""
        return TaskRules.of(self.task, self.world, self.encoder)

    @property
    def kept(self) -> list[str]:
        """The backbones kept by the Pareto filter, cheapest pool first."""
        return list(self.context.backbone_names)

    def strongest_backbone(self) -> str:
        """The catalog's highest-Perf backbone, kept or not (the base MAS of the metrics uses it)."""
        return str(self.pools.triples["perf"].idxmax())

    def embed(self, queries: Sequence[Query]) -> torch.Tensor:
        return torch.stack([self.embeddings[q.id] for q in queries])

    def execute(self, pairs: Sequence[tuple[MAS, Query]]) -> list[Outcome]:
        return execute(self.world, self.roles, pairs, self.rules.grader, same_answer=self.rules.same_answer)
