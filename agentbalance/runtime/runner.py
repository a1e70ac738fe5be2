"""The async DAG runner: each agent starts as soon as all its predecessors finished.

It executes a given MAS and accounts for it; it never decides which agents run (that is the policy).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query, SameAnswer
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AgentResult, Caps, Execution, Grader
from agentbalance.runtime.trace import Trace
from agentbalance.worlds.base import AgentCall, AgentCallFailed, TextSink, World, same_recorded_answer

__all__ = ["Caps", "Grader", "RunProgress", "Runner", "call_world"]


@dataclass
class RunProgress:
    """What one run has done so far, kept by the runner for a caller that may cancel the run (serve: a client
    that left): calls started and finished, and what the finished ones cost. Never shared between runs."""

    started: int = 0
    finished: int = 0
    cost_usd: float = 0.0

    @property
    def in_flight(self) -> int:
        return self.started - self.finished


class Runner:
    """Runs MAS on queries in a world. One concurrency limit bounds the LLM calls in flight across queries."""

    def __init__(
        self,
        world: World,
        roles: RoleSet,
        concurrency: int = 32,
        caps: Caps | None = None,
        grader: Grader | None = None,
        same_answer: SameAnswer = same_recorded_answer,
    ) -> None:
        if concurrency < 1:
            raise AgentBalanceError(f"concurrency must be at least 1, got {concurrency}")
        self.world = world
        self.roles = roles
        self.concurrency = concurrency
        self.caps = caps or Caps()
        self.grader = grader
        self.same_answer = same_answer  # the task's rule; conditional agents compare their inputs with it

    async def run(
        self,
        mas: MAS,
        query: Query,
        limit: asyncio.Semaphore | None = None,
        progress: RunProgress | None = None,
        stream: TextSink | None = None,
    ) -> Trace:
        """Execute `mas` on `query`; agent failures are recorded, user errors (AgentBalanceError) raise. Cancelling
        it cancels its calls in flight and starts no other; `progress` (if given) says what it had done by then;
        `stream` (if given) receives the decision agent's text as its call produces it (nothing when it is skipped).

        Event-driven: an agent's task is created the moment its last predecessor finishes, so no
        task ever waits on another and the per-agent cost stays a few microseconds.
        """
        mas.check_against(self.world.catalog, self.roles)
        limit = limit or asyncio.Semaphore(self.concurrency)
        started = time.perf_counter()
        execution = Execution(mas, query, self.roles, self.world.catalog, self.caps, self.same_answer)
        all_done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        running: set[asyncio.Task[None]] = set()

        def launch(agent_id: str) -> None:
            task = asyncio.create_task(run_agent(agent_id))
            running.add(task)
            task.add_done_callback(settle)

        def settle(task: asyncio.Task[None]) -> None:
            running.discard(task)
            if task.cancelled() or all_done.done():
                return
            if task.exception() is not None:
                all_done.set_exception(task.exception())  # type: ignore[arg-type]
            elif execution.done:
                all_done.set_result(None)

        async def run_agent(agent_id: str) -> None:
            skip = execution.decide(agent_id)
            if skip is not None:
                ready = execution.skip(agent_id, skip)
            else:
                call = execution.call(agent_id)
                if stream is not None and agent_id == mas.decision:
                    call = dataclasses.replace(call, stream=stream)
                async with limit:
                    if progress is not None:
                        progress.started += 1
                    result = await self._call(call)
                    if progress is not None:
                        progress.finished += 1
                        progress.cost_usd += result.cost_usd
                ready = execution.finish(agent_id, result)
            for successor in ready:
                launch(successor)

        for agent_id in execution.start():
            launch(agent_id)
        try:
            await all_done
        finally:
            for task in list(running):
                task.cancel()
        return execution.trace(self.world.name, time.perf_counter() - started, self.grader)

    async def run_many(self, items: Iterable[tuple[MAS, Query]]) -> list[Trace]:
        """Run many (MAS, query) pairs concurrently under this runner's one concurrency limit; order kept."""
        limit = asyncio.Semaphore(self.concurrency)
        return list(await asyncio.gather(*(self.run(mas, query, limit) for mas, query in items)))

    def run_sync(self, items: Sequence[tuple[MAS, Query]]) -> list[Trace]:
        """`run_many` for callers without an event loop."""
        return asyncio.run(self.run_many(items))

    async def _call(self, call: AgentCall) -> AgentResult:
        return await call_world(self.world, call)


async def call_world(world: World, call: AgentCall) -> AgentResult:
    """One agent's call answered by a world, as every path that runs a MAS records it: a completion, or a
    failure with what it still cost; a user error (AgentBalanceError) raises."""
    try:
        return AgentResult(await world.complete(call))
    except AgentBalanceError:
        raise
    except AgentCallFailed as failure:
        return AgentResult.failed(failure)
    except Exception as failure:  # a world bug or an unexpected client error: recorded, never silent
        return AgentResult(error=f"{type(failure).__name__}: {failure}")
