"""A ChatCompletionClient answered by an agentbalance world (simulated, replay, live): offline, exact usage.

It never tokenizes (the usage is the world's) and never accounts for a run (the runner folds its results in).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal

from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,  # type: ignore[attr-defined]
    ModelFamily,
    ModelInfo,
    RequestUsage,
    SystemMessage,
)
from autogen_core.tools import Tool, ToolSchema

from agentbalance.adapters.autogen.graphflow import AgentSlot
from agentbalance.adapters.autogen.names import TASK_SOURCE
from agentbalance.catalog import Backbone
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, as_query
from agentbalance.worlds.base import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    AgentCall,
    AgentCallFailed,
    Completion,
    Upstream,
    World,
)

CONTEXT_TOKENS = 131_072  # the context window the world-backed client reports (worlds have no limit)
WORLD_MODEL_INFO: ModelInfo = {
    "vision": False,
    "function_calling": False,
    "json_output": False,
    "family": ModelFamily.UNKNOWN,
    "structured_output": False,
}


class WorldClients:
    """Model clients backed by an agentbalance world for ONE flow (one task): a factory for `build_graphflow`.

    It gives each agent a WorldChatClient bound to that agent's role and backbone and to the task's
    Query (so the simulated world grades against the query it is given), and it remembers what each
    agent said, so a later agent's incoming messages reach the world as the completions they were.
    Only messages an agent actually received become its inputs. Without a Query, the task text is used.
    `samples`: which sample of its backbone each agent id reads (`execution.sample_indices` of the MAS; absent: 0).
    """

    def __init__(self, world: World, query: Query | None = None, samples: Mapping[str, int] | None = None) -> None:
        if not isinstance(world, World):
            raise AgentBalanceError(f"{world!r} is not an agentbalance world (no name, catalog and async complete)")
        self.world = world
        self.query = query
        self.samples: Mapping[str, int] = samples or {}
        self._said: dict[str, list[tuple[str, Upstream | None]]] = {}  # AutoGen name -> (text, upstream | failed)

    def __call__(self, slot: AgentSlot) -> WorldChatClient:
        return WorldChatClient(self, slot, self.world.catalog[slot.agent.backbone])

    def record(self, name: str, text: str, upstream: Upstream | None) -> None:
        """What agent `name` said; `upstream` None marks a failed call (its successors get no input from it)."""
        self._said.setdefault(name, []).append((text, upstream))

    def heard(self, source: str, text: str) -> tuple[bool, Upstream | None]:
        """(known, upstream) of a message from `source` with this text; (True, None) for a failed call."""
        for said, upstream in reversed(self._said.get(source, [])):
            if said == text:
                return True, upstream
        return False, None


class WorldChatClient(ChatCompletionClient):
    """An AutoGen model client whose completions come from an agentbalance world (simulated, replay, live).

    Bound to one agent of one flow (see WorldClients). It reports the world's usage as RequestUsage, so
    AutoGen's `models_usage` and every sum over it are the world's; a failed call (AgentCallFailed) is
    recorded and answered with a short failure notice, as the runner records it and carries on.
    """

    def __init__(self, episode: WorldClients, slot: AgentSlot, backbone: Backbone) -> None:
        self.episode = episode
        self.slot = slot
        self.backbone = backbone
        self.calls: list[AgentCall] = []  # what this agent asked the world, inputs included
        self.completions: list[Completion] = []
        self.failures: list[AgentCallFailed] = []
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[Any] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        if tools:
            raise AgentBalanceError(f"agent {self.slot.name!r}: a world-backed client cannot call tools")
        query, inputs, note = self._query(messages), self._inputs(messages), self._note(messages)
        sample = self.episode.samples.get(self.slot.agent.id, 0)
        call = AgentCall(self.slot.agent, self.slot.role, self.backbone, query, inputs, note=note, sample=sample)
        self.calls.append(call)
        try:
            completion = await self._complete(call)
        except AgentCallFailed as failure:
            self.failures.append(failure)
            text = f"[{self.slot.name}: call failed: {failure}]"
            self.episode.record(self.slot.name, text, None)
            return self._result(text, failure.prompt_tokens, 0, "unknown", cached=False)
        self.completions.append(completion)
        self.episode.record(self.slot.name, completion.text, self._upstream(completion))
        return self._result(
            completion.text, completion.prompt_tokens, completion.completion_tokens, "stop", completion.cached
        )

    def passed(self, text: str, output: Completion | None) -> None:
        """This agent was skipped (it never called the world): it said `text`, and its successors receive
        `output` as its completion (None: nothing, as from a failed call)."""
        self.episode.record(self.slot.name, text, self._upstream(output) if output is not None else None)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **options: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The whole completion as one chunk, then the result (worlds do not stream); options as `create`'s."""
        result = await self.create(messages, **options)
        assert isinstance(result.content, str)
        yield result.content
        yield result

    def _upstream(self, completion: Completion) -> Upstream:
        return Upstream(self.slot.agent.id, self.slot.role, self.backbone, completion)

    async def _complete(self, call: AgentCall) -> Completion:
        return await self.episode.world.complete(call)

    def _query(self, messages: Sequence[LLMMessage]) -> Query:
        if self.episode.query is not None:
            return self.episode.query
        for message in messages:
            if getattr(message, "source", None) == TASK_SOURCE and isinstance(message.content, str):
                return as_query(message.content)
        raise AgentBalanceError(f"agent {self.slot.name!r} received no task message (source {TASK_SOURCE!r})")

    def _note(self, messages: Sequence[LLMMessage]) -> str:
        """What the task's source said after the task itself (the execution's note to a conditional agent)."""
        said = [m.content for m in messages if getattr(m, "source", None) == TASK_SOURCE and isinstance(m.content, str)]
        return "\n\n".join(said[1:])

    def _inputs(self, messages: Sequence[LLMMessage]) -> list[Upstream]:
        """The completions behind the other agents' messages this agent received, in the order received."""
        inputs: list[Upstream] = []
        for message in messages:
            source = getattr(message, "source", None)
            if isinstance(message, SystemMessage) or source in (None, TASK_SOURCE, self.slot.name):
                continue
            if not isinstance(message.content, str):
                raise AgentBalanceError(f"agent {self.slot.name!r}: a world-backed client takes text messages only")
            known, upstream = self.episode.heard(str(source), message.content)
            if not known:
                raise AgentBalanceError(
                    f"agent {self.slot.name!r} received a message from {source!r} that no world-backed client of "
                    "this flow produced: every agent of a world-backed flow needs a client from the same WorldClients"
                )
            if upstream is not None:
                inputs.append(upstream)
        return inputs

    def _result(self, text: str, prompt: int, completion: int, finish: Any, cached: bool) -> CreateResult:
        usage = RequestUsage(prompt_tokens=prompt, completion_tokens=completion)
        self._usage = RequestUsage(
            prompt_tokens=self._usage.prompt_tokens + prompt,
            completion_tokens=self._usage.completion_tokens + completion,
        )
        return CreateResult(finish_reason=finish, content=text, usage=usage, cached=cached)

    async def close(self) -> None:
        """Nothing to release: the world belongs to the caller."""

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        """Characters / 4 plus a per-message overhead: the project's estimate, no tokenizer download."""
        return sum(-(-len(str(m.content)) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS for m in messages)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return CONTEXT_TOKENS - self.count_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return {"vision": False, "function_calling": False, "json_output": False}  # type: ignore[typeddict-item]

    @property
    def model_info(self) -> ModelInfo:
        return WORLD_MODEL_INFO
