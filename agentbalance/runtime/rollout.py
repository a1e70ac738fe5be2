"""The fast synchronous path for training: execute a MAS in a CPU-only world without an event loop.

It drives the one execution semantics (`execution.Execution`) in topological order; it is a driver, never
a second scheduler. Live worlds go through the async Runner instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentbalance.mas import MAS
from agentbalance.query import Query, SameAnswer
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AgentResult, Execution, Grader, Outcome
from agentbalance.worlds.base import AgentCallFailed, SyncWorld, World, same_recorded_answer

__all__ = ["Grader", "Outcome", "execute", "rollout", "rollout_execution"]


def rollout_execution(
    world: SyncWorld, roles: RoleSet, mas: MAS, query: Query, same_answer: SameAnswer = same_recorded_answer
) -> Execution:
    """Run `mas` on `query` agent by agent in topological order; returns the finished execution."""
    execution = Execution(mas, query, roles, world.catalog, same_answer=same_answer)
    for agent_id in mas.topological_order():
        skip = execution.decide(agent_id)
        if skip is not None:
            execution.skip(agent_id, skip)
            continue
        try:
            completion = world.answer(execution.call(agent_id))
        except AgentCallFailed as failure:
            execution.finish(agent_id, AgentResult.failed(failure))
            continue
        execution.finish(agent_id, AgentResult(completion))
    return execution


def rollout(world: SyncWorld, roles: RoleSet, mas: MAS, query: Query) -> Outcome:
    """What training needs from one run of `mas` on `query` (latency: the modelled critical path; graded by
    the world, answers compared as the world's canonical answers)."""
    return rollout_execution(world, roles, mas, query).outcome()


def execute(
    world: World,
    roles: RoleSet,
    pairs: Sequence[tuple[MAS, Query]],
    grader: Grader | None = None,
    concurrency: int = 32,
    same_answer: SameAnswer = same_recorded_answer,
) -> list[Outcome]:
    """Run many (MAS, query) pairs: inline in a CPU-only world, else (live) through the async Runner,
    all pairs concurrently under one limit; graded by the one rule (`execution.grade`), answers compared
    by `same_answer` (the task's rule)."""
    if isinstance(world, SyncWorld):
        return [rollout_execution(world, roles, mas, q, same_answer).outcome(grader) for mas, q in pairs]
    from agentbalance.runtime.runner import Runner

    runner = Runner(world, roles, concurrency=concurrency, grader=grader, same_answer=same_answer)
    traces = runner.run_sync(list(pairs))
    return [Outcome(t.answer, t.score, t.cost_usd, t.latency_s, len(t.agents), t.escalated) for t in traces]
