"""One experiment's fixed ground: the world, its pools, the role library, the splits and the query embeddings.

`build` and every method of a `curve` sweep stand on the same Experiment, so they see the same test
questions and are charged by the same accounting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from agentbalance.encoders import TextEncoder
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerCatalogs, ControllerContext
from agentbalance.pooling import PoolingResult, build_pools
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.rollout import Outcome, execute
from agentbalance.tasks.base import Task
from agentbalance.train.data import Splits

if TYPE_CHECKING:
    from agentbalance.train.build import BuildSpec
    from agentbalance.train.reinforce import Evaluation, TrainConfig


@dataclass
class Experiment:
    """Everything a method needs to train on `splits.train` and be measured on `splits.test`."""

    world: Any
    catalogs: ControllerCatalogs  # the backbones as the controller sees them (described, pooled)
    roles: RoleSet
    task: Task | None
    pools: PoolingResult
    context: ControllerContext
    splits: Splits
    embeddings: dict[str, torch.Tensor]  # query id -> sentence embedding of the rendered question
    encoder: TextEncoder
    train_config: TrainConfig  # the seed and the training knobs every learned method of the run shares

    @classmethod
    def open(
        cls, spec: BuildSpec, roles: RoleSet | None = None, on_stage: Callable[[str], None] = lambda stage: None
    ) -> Experiment:
        from agentbalance.train.build import embed_queries, resolve_world, spec_splits

        on_stage("loading the world and building pools")
        world, catalogs, default_roles, task = resolve_world(spec)
        roles = roles or default_roles
        pools = build_pools(catalogs.pooled, k=spec.pools, seed=spec.train.seed)
        encoder = TextEncoder()
        context = ControllerContext.build(catalogs.described, pools, roles, encoder)
        splits = spec_splits(spec, world, task)
        on_stage("embedding the questions")
        embeddings = embed_queries(encoder, splits.train + splits.val + splits.test)
        return cls(
            world,
            catalogs,
            roles,
            task,
            pools,
            context,
            splits,
            embeddings,
            encoder,
            spec.train,
        )

    @property
    def seed(self) -> int:
        return self.train_config.seed

    @property
    def grader(self) -> Callable[[Query, str | None], bool | None] | None:
        """The task's scorer for worlds that do not grade (live); None where the world grades."""
        return self.task.score if self.task is not None else None

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
        return execute(self.world, self.roles, pairs, self.grader)

    def measure(self, masses: Sequence[MAS], queries: Sequence[Query]) -> Evaluation:
        """Run one MAS per query and summarise Perf / Tok / Lat with their upper bounds."""
        from agentbalance.train.reinforce import summarise

        outcomes = self.execute(list(zip(masses, queries, strict=True)))
        return summarise(masses, outcomes, self.train_config.confidence_z)
