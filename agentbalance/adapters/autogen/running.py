"""Runs any MAS as a fresh AutoGen GraphFlow per task, driving `Execution`: decide before each call, finish after.

It never grades, schedules or caps on its own (the execution does), and never decides the MAS.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from typing import Any

from autogen_agentchat.base import TaskResult
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,  # type: ignore[attr-defined]
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema

from agentbalance.adapters.autogen.graphflow import AgentSlot, build_graphflow, client_for
from agentbalance.adapters.autogen.names import TASK_SOURCE
from agentbalance.adapters.autogen.world_client import WorldChatClient, WorldClients
from agentbalance.adapters.driving import AdapterRunner, FrameworkRun, Parse, Reply, client_failure, priced
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.runtime.execution import AgentResult, Execution, Skip, sample_indices
from agentbalance.worlds.base import Completion

NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


class BalancedRun(FrameworkRun[TaskResult]):
    """One task through the plug-in: AutoGen's TaskResult, agentbalance's Trace, and the MAS that ran."""


class GraphFlowRunner(AdapterRunner[ChatCompletionClient]):
    """Runs any MAS as a fresh AutoGen GraphFlow per task and accounts for it as agentbalance's runner does:
    both drive the same `Execution` (per-query caps, schedule, critical path, the one grading rule).

    Exactly one of `clients` (backbone name -> model client, or a factory per agent) and `world` (every
    call answered by an agentbalance world). `catalog` prices the usage (default: the world's). Answers
    of ordinary clients are read by `parse` (default: an option letter, else a stated math answer, else the reply);
    `grader` is the task's scorer (`execution.grade`: a world that knows the truth decides first) and
    `same_answer` its rule for comparing answers (conditional agents; default: `agreement.answers_agree`).
    """

    framework = "autogen"

    async def run_many(  # type: ignore[override]
        self, pairs: Sequence[tuple[MAS, str | Query]], concurrency: int = 8
    ) -> list[BalancedRun]:
        """Several (MAS, task) pairs, at most `concurrency` flows at once; order kept."""
        return await super().run_many(pairs, concurrency)

    async def run(self, mas: MAS, task: str | Query) -> BalancedRun:
        """Run `mas` on one task as a fresh GraphFlow; its trace is the execution's."""
        execution = self.execution(mas, task)
        query = execution.query
        episode = WorldClients(self.world, query, sample_indices(mas)) if self.world is not None else None

        def client(slot: AgentSlot) -> ChatCompletionClient:
            inner = episode(slot) if episode is not None else client_for(self.clients, slot)  # type: ignore[arg-type]
            return ExecutionClient(inner, slot, execution, self.read_answer)

        built = build_graphflow(mas, client, self.roles)
        started = time.perf_counter()
        result = await built.flow.run(task=query.render())
        return BalancedRun(result, self.trace(execution, time.perf_counter() - started), mas, built.names)


def afresh(messages: Sequence[LLMMessage], note: str) -> list[LLMMessage]:
    """The messages of a conditional agent that runs, asked afresh as the execution asks it: its system
    prompt and the task, without the other agents' messages, and the execution's note (its inputs disagreed)."""
    own = [m for m in messages if isinstance(m, SystemMessage) or getattr(m, "source", None) == TASK_SOURCE]
    return [*own, UserMessage(content=note, source=TASK_SOURCE)]


class ExecutionClient(ChatCompletionClient):
    """One agent's model client in one flow, as the execution sees it: before the call it asks
    `execution.decide` (a skipped agent never calls its model: it says a short note, or the skip's output,
    at zero usage); after it, it folds the call in with `execution.finish` (usage as AutoGen reports it in
    `models_usage`, USD at catalog prices, latency world-modelled for a world-backed client, else measured).
    A failing call is recorded as the runner records it (AgentBalanceError, a user error, still raises)."""

    def __init__(self, inner: ChatCompletionClient, slot: AgentSlot, execution: Execution, parse: Parse) -> None:
        self.inner = inner
        self.slot = slot
        self.execution = execution
        self.parse = parse

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        agent_id = self.slot.agent.id
        waiting = [p for p in self.execution.mas.predecessors(agent_id) if p not in self.execution.results]
        if waiting:
            raise AgentBalanceError(f"AutoGen called agent {agent_id!r} before its input(s) {waiting} answered")
        skip = self.execution.decide(agent_id)
        if skip is not None:
            return self._skipped(skip)
        if agent_id in self.execution.escalated:
            messages = afresh(messages, self.execution.call(agent_id).note)
        failures = len(self.inner.failures) if isinstance(self.inner, WorldChatClient) else 0
        started = time.perf_counter()
        try:
            result = await self.inner.create(messages, **kwargs)
        except AgentBalanceError:
            raise
        except Exception as failure:  # a client error: recorded, never silent, and the flow carries on
            self.execution.finish(agent_id, client_failure(failure, time.perf_counter() - started))
            return self._said(f"[{self.slot.name}: call failed: {failure}]", None, "unknown")
        self.execution.finish(agent_id, self._result(result, time.perf_counter() - started, failures))
        return result

    def _skipped(self, skip: Skip) -> CreateResult:
        self.execution.skip(self.slot.agent.id, skip)
        text = skip.output.text if skip.output is not None else f"[{self.slot.name}: skipped: {skip.reason}]"
        return self._said(text, skip.output, "stop")

    def _said(self, text: str, output: Completion | None, finish: Any) -> CreateResult:
        """What an agent that made no (successful) call says, at zero usage; a world-backed flow hears it too."""
        if isinstance(self.inner, WorldChatClient):
            self.inner.passed(text, output)
        return CreateResult(finish_reason=finish, content=text, usage=NO_USAGE, cached=False)

    def _result(self, result: CreateResult, seconds: float, failures_before: int) -> AgentResult:
        """The call as the execution folds it in: the usage AutoGen reports, priced from the catalog."""
        prompt, completion = result.usage.prompt_tokens, result.usage.completion_tokens
        cost = self.execution.catalog[self.slot.agent.backbone].call_cost_usd(prompt, completion)
        text = result.content if isinstance(result.content, str) else str(result.content)
        inner = self.inner
        if isinstance(inner, WorldChatClient):
            if len(inner.failures) > failures_before:
                failure = inner.failures[-1]
                return AgentResult(
                    error=str(failure) or type(failure).__name__,
                    failed_latency_s=failure.latency_s,
                    failed_cost_usd=cost,
                    failed_prompt_tokens=prompt,
                )
            world = inner.completions[-1]  # the world's own completion: its answer, latency, grade (`score`)
            return AgentResult(
                replace(world, text=text, prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost)
            )
        return priced(self.execution, self.slot.agent.id, Reply(text, prompt, completion), seconds, self.parse)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The whole result as one chunk (asked and folded in once, by `create`), then the result."""
        result = await self.create(messages, **kwargs)
        if isinstance(result.content, str):
            yield result.content
        yield result

    async def close(self) -> None:
        """The inner client may serve other agents and flows: its owner closes it."""

    def actual_usage(self) -> RequestUsage:
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return self.inner.count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return self.inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return self.inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        return self.inner.model_info
