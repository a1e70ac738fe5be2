"""The async DAG runner: each agent starts as soon as all its predecessors finished.

It executes a given MAS and accounts for it; it never decides which agents run (that is the policy).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.accounting import modelled_schedule
from agentbalance.runtime.trace import AgentTrace, Trace
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion, Upstream, World

Grader = Callable[[Query, str | None], bool | None]


@dataclass(frozen=True)
class Caps:
    """Optional hard per-query caps: once reached, no new agent is launched."""

    max_usd: float | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name, value in (("max_usd", self.max_usd), ("max_seconds", self.max_seconds)):
            # NaN would compare false everywhere and silently never cap; infinity is no cap: both are mistakes
            if value is not None and not (math.isfinite(value) and value > 0):
                raise AgentBalanceError(f"per-query cap {name} must be positive and finite, got {value}")


@dataclass
class _QueryState:
    """What the agents of one query share while it runs: USD spent so far, and the cap that stopped it."""

    spent_usd: float = 0.0
    capped: str | None = None


@dataclass
class _Outcome:
    completion: Completion | None
    error: str | None = None
    skipped: str | None = None
    failed_latency_s: float = 0.0
    failed_cost_usd: float = 0.0
    failed_prompt_tokens: int = 0


class Runner:
    """Runs MAS on queries in a world. One concurrency limit bounds the LLM calls in flight across queries."""

    def __init__(
        self,
        world: World,
        roles: RoleSet,
        concurrency: int = 32,
        caps: Caps | None = None,
        grader: Grader | None = None,
    ) -> None:
        if concurrency < 1:
            raise AgentBalanceError(f"concurrency must be at least 1, got {concurrency}")
        self.world = world
        self.roles = roles
        self.concurrency = concurrency
        self.caps = caps or Caps()
        self.grader = grader

    async def run(self, mas: MAS, query: Query, limit: asyncio.Semaphore | None = None) -> Trace:
        """Execute `mas` on `query`; agent failures are recorded, user errors (AgentBalanceError) raise.

        Event-driven: an agent's task is created the moment its last predecessor finishes, so no
        task ever waits on another and the per-agent cost stays a few microseconds.
        """
        mas.check_against(self.world.catalog, self.roles)
        limit = limit or asyncio.Semaphore(self.concurrency)
        started = time.perf_counter()
        outcomes: dict[str, _Outcome] = {}
        delivered: dict[str, Upstream] = {}  # what each successful agent passes on to its successors
        finished_at: dict[str, float] = {}  # modelled end time of each finished agent
        waiting_on = {agent.id: len(mas.predecessors(agent.id)) for agent in mas.agents}
        all_done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        running: set[asyncio.Task[None]] = set()
        state = _QueryState()

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
            elif len(outcomes) == len(mas.agents):
                all_done.set_result(None)

        async def run_agent(agent_id: str) -> None:
            predecessors = mas.predecessors(agent_id)
            modelled_start = max((finished_at[p] for p in predecessors), default=0.0)
            reason = self._cap_reason(state.spent_usd, modelled_start)
            if reason is not None:
                state.capped = state.capped or reason
                outcome = _Outcome(None, skipped=reason)
            else:
                agent = mas.agent(agent_id)
                role, backbone = self.roles[agent.role], self.world.catalog[agent.backbone]
                inputs = [delivered[p] for p in predecessors if p in delivered]
                async with limit:
                    outcome = await self._call(AgentCall(agent, role, backbone, query, inputs))
                if outcome.completion is not None:
                    delivered[agent_id] = Upstream(agent_id, role, backbone, outcome.completion)
            latency = outcome.completion.latency_s if outcome.completion else outcome.failed_latency_s
            state.spent_usd += outcome.completion.cost_usd if outcome.completion else outcome.failed_cost_usd
            finished_at[agent_id] = modelled_start + latency
            outcomes[agent_id] = outcome
            for successor in mas.successors(agent_id):
                waiting_on[successor] -= 1
                if waiting_on[successor] == 0:
                    launch(successor)

        for agent in mas.agents:
            if waiting_on[agent.id] == 0:
                launch(agent.id)
        try:
            await all_done
        finally:
            for task in list(running):
                task.cancel()
        return self._trace(mas, query, outcomes, time.perf_counter() - started, state.capped)

    async def run_many(self, items: Iterable[tuple[MAS, Query]]) -> list[Trace]:
        """Run many (MAS, query) pairs concurrently under this runner's one concurrency limit; order kept."""
        limit = asyncio.Semaphore(self.concurrency)
        return list(await asyncio.gather(*(self.run(mas, query, limit) for mas, query in items)))

    def run_sync(self, items: Sequence[tuple[MAS, Query]]) -> list[Trace]:
        """`run_many` for callers without an event loop."""
        return asyncio.run(self.run_many(items))

    def _cap_reason(self, spent_usd: float, modelled_start_s: float) -> str | None:
        if self.caps.max_usd is not None and spent_usd >= self.caps.max_usd:
            return f"max_usd {self.caps.max_usd:g} reached"
        if self.caps.max_seconds is not None and modelled_start_s >= self.caps.max_seconds:
            return f"max_seconds {self.caps.max_seconds:g} reached"
        return None

    async def _call(self, call: AgentCall) -> _Outcome:
        try:
            return _Outcome(await self.world.complete(call))
        except AgentBalanceError:
            raise
        except AgentCallFailed as failure:
            return _Outcome(
                None,
                error=str(failure) or type(failure).__name__,
                failed_latency_s=failure.latency_s,
                failed_cost_usd=failure.cost_usd,
                failed_prompt_tokens=failure.prompt_tokens,
            )
        except Exception as failure:  # a world bug or an unexpected client error: recorded, never silent
            return _Outcome(None, error=f"{type(failure).__name__}: {failure}")

    def _trace(self, mas: MAS, query: Query, outcomes: dict[str, _Outcome], wall_s: float, capped: str | None) -> Trace:
        latencies = {
            agent_id: (o.completion.latency_s if o.completion else o.failed_latency_s)
            for agent_id, o in outcomes.items()
        }
        schedule = modelled_schedule(mas, latencies)
        agents = []
        for agent in mas.agents:
            outcome = outcomes[agent.id]
            completion = outcome.completion
            start, end = schedule[agent.id]
            agents.append(
                AgentTrace(
                    id=agent.id,
                    role=agent.role,
                    backbone=agent.backbone,
                    answer=completion.answer if completion else None,
                    text=completion.text if completion else "",
                    prompt_tokens=completion.prompt_tokens if completion else outcome.failed_prompt_tokens,
                    completion_tokens=completion.completion_tokens if completion else 0,
                    reasoning_tokens=completion.reasoning_tokens if completion else 0,
                    cost_usd=completion.cost_usd if completion else outcome.failed_cost_usd,
                    latency_s=latencies[agent.id],
                    start_s=start,
                    end_s=end,
                    error=outcome.error,
                    skipped=outcome.skipped,
                    inputs=tuple(mas.predecessors(agent.id)),
                )
            )
        final = outcomes[mas.decision].completion
        answer = final.answer if final else None
        correct = final.correct if final else None
        if correct is None and self.grader is not None and query.answer is not None:
            correct = self.grader(query, answer)
        if final is None and query.answer is not None:
            correct = False  # no answer is a wrong answer when the gold is known
        latency_s = schedule[mas.decision][1]
        return Trace.summed(query.id, answer, correct, tuple(agents), latency_s, wall_s, self.world.name, capped)
