"""The fast synchronous path for training: execute a MAS in a CPU-only world without an event loop.

Same semantics as the async runner (topological order, inputs from the predecessors that succeeded,
modelled critical-path latency); it must stay its twin in behaviour, not a second scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion, Upstream


class SyncWorld(Protocol):
    """A world whose calls are pure CPU (simulated, replay): `answer` needs no event loop."""

    catalog: Catalog

    def answer(self, call: AgentCall) -> Completion: ...


@dataclass(frozen=True)
class Outcome:
    """What training needs from one MAS run: the answer, whether it is right, and what it cost."""

    answer: str | None
    correct: bool
    cost_usd: float
    latency_s: float
    agents: int


def rollout(world: SyncWorld, roles: RoleSet, mas: MAS, query: Query) -> Outcome:
    """Run `mas` on `query` agent by agent in topological order; latency is the modelled critical path."""
    if not hasattr(world, "answer"):
        raise AgentBalanceError(f"world {getattr(world, 'name', world)!r} has no synchronous path; use the Runner")
    delivered: dict[str, Upstream] = {}
    finished_at: dict[str, float] = {}
    cost = 0.0
    final: Completion | None = None
    for agent_id in mas.topological_order():
        agent = mas.agent(agent_id)
        role, backbone = roles[agent.role], world.catalog[agent.backbone]
        predecessors = mas.predecessors(agent_id)
        start = max((finished_at[p] for p in predecessors), default=0.0)
        inputs = [delivered[p] for p in predecessors if p in delivered]
        try:
            completion = world.answer(AgentCall(agent, role, backbone, query, inputs))
        except AgentCallFailed as failure:
            cost += failure.cost_usd
            finished_at[agent_id] = start + failure.latency_s
            continue
        cost += completion.cost_usd
        finished_at[agent_id] = start + completion.latency_s
        delivered[agent_id] = Upstream(agent_id, role, backbone, completion)
        if agent_id == mas.decision:
            final = completion
    return Outcome(
        answer=final.answer if final else None,
        correct=bool(final is not None and final.correct),
        cost_usd=cost,
        latency_s=finished_at[mas.decision],
        agents=len(mas),
    )


def execute(
    world: object,
    roles: RoleSet,
    pairs: Sequence[tuple[MAS, Query]],
    grader: Callable[[Query, str | None], bool | None] | None = None,
    concurrency: int = 32,
) -> list[Outcome]:
    """Run many (MAS, query) pairs: inline in a CPU-only world, else (live) through the async Runner,
    all pairs concurrently under one limit and graded by `grader` (the task's scorer)."""
    if hasattr(world, "answer"):
        return [rollout(world, roles, mas, query) for mas, query in pairs]  # type: ignore[arg-type]
    from agentbalance.runtime.runner import Runner

    traces = Runner(world, roles, concurrency=concurrency, grader=grader).run_sync(list(pairs))  # type: ignore[arg-type]
    return [Outcome(t.answer, bool(t.correct), t.cost_usd, t.latency_s, len(t.agents)) for t in traces]
