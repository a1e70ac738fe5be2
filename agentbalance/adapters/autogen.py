"""AutoGen AgentChat adapter: a MAS as a GraphFlow, agentbalance as a plug-in over a user's AutoGen team,
a ChatCompletionClient backed by any agentbalance world, and a standalone GraphFlow script per MAS.

It translates and accounts; it never decides the MAS (the controller does) and never tokenizes: usage
comes from each call's `models_usage`, so no tokenizer (tiktoken) is ever downloaded.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import keyword
import re
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import Role, RoleKind, RoleSet
from agentbalance.runtime.execution import modelled_schedule
from agentbalance.runtime.trace import AgentTrace, Trace
from agentbalance.worlds.base import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    AgentCall,
    AgentCallFailed,
    Completion,
    Upstream,
    World,
)

INSTALL_HINT = 'pip install "agentbalance[autogen]"'

try:
    from autogen_agentchat.agents import AssistantAgent, MessageFilterAgent, MessageFilterConfig, PerSourceFilter
    from autogen_agentchat.base import TaskResult
    from autogen_agentchat.messages import BaseChatMessage
    from autogen_agentchat.teams import DiGraph, DiGraphBuilder, GraphFlow
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
except ImportError as error:
    raise AgentBalanceError(
        f"the AutoGen adapter needs AutoGen AgentChat 0.7 ({error.name or error} is not installed): {INSTALL_HINT}"
    ) from None

if TYPE_CHECKING:
    import torch

    from agentbalance.budgets import Budget
    from agentbalance.policy.controller import Controller

TASK_SOURCE = "user"  # AutoGen's source name of the task message
RESERVED_NAMES = frozenset({TASK_SOURCE})
CONTEXT_TOKENS = 131_072  # the context window the world-backed client reports (worlds have no limit)
WORLD_MODEL_INFO: ModelInfo = {
    "vision": False,
    "function_calling": False,
    "json_output": False,
    "family": ModelFamily.UNKNOWN,
    "structured_output": False,
}
_DEFAULT_AGENT_DESCRIPTION = inspect.signature(AssistantAgent.__init__).parameters["description"].default


# ---- names


def autogen_names(mas: MAS) -> dict[str, str]:
    """AutoGen agent name of every MAS agent id: its role as a Python identifier, suffixed by the id when
    two agents share a role. Deterministic, so the mapping can be recomputed from the MAS alone."""
    slugs = {agent.id: _identifier(agent.role) for agent in mas.agents}
    repeated = {slug for slug in slugs.values() if list(slugs.values()).count(slug) > 1}
    names: dict[str, str] = {}
    for agent in mas.agents:
        name = slugs[agent.id]
        if name in repeated or name in RESERVED_NAMES:
            name = f"{name}_{_identifier(agent.id)}"
        base, suffix = name, 2
        while name in names.values():  # two ids that collide once made identifiers ("a-0", "a_0")
            name, suffix = f"{base}_{suffix}", suffix + 1
        names[agent.id] = name
    return names


def _identifier(text: str) -> str:
    """A Python identifier that keeps the text readable: "Final Answerer" -> "Final_Answerer"."""
    name = re.sub(r"\W+", "_", text.strip(), flags=re.ASCII).strip("_") or "agent"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = f"agent_{name}"
    return name


# ---- MAS -> GraphFlow


@dataclass(frozen=True)
class AgentSlot:
    """One MAS agent as AutoGen will run it: what a client factory needs to pick its model client."""

    agent: Agent  # id, role name, backbone name
    name: str  # its AutoGen name
    role: Role


ClientFactory = Callable[[AgentSlot], ChatCompletionClient]
ClientSource = Mapping[str, ChatCompletionClient] | ClientFactory  # by backbone name, or per agent


@dataclass(frozen=True)
class FlowBuild:
    """A GraphFlow and how it maps to its MAS: AutoGen names and the model client of each agent id."""

    flow: GraphFlow
    graph: DiGraph
    names: dict[str, str]  # MAS agent id -> AutoGen agent name
    clients: dict[str, ChatCompletionClient]  # MAS agent id -> its model client

    @property
    def ids(self) -> dict[str, str]:
        """AutoGen agent name -> MAS agent id."""
        return {name: agent_id for agent_id, name in self.names.items()}


def to_graphflow(mas: MAS, clients: ClientSource, roles: RoleSet) -> GraphFlow:
    """The MAS as an AutoGen GraphFlow (see `build_graphflow` for the mapping and the clients used)."""
    return build_graphflow(mas, clients, roles).flow


def build_graphflow(mas: MAS, clients: ClientSource, roles: RoleSet) -> FlowBuild:
    """One AssistantAgent per MAS agent (its role's prompt as system message, its backbone's client), wrapped
    so it sees only the task and its predecessors' last messages, wired by the MAS edges.

    `clients` maps backbone names to model clients, or is a factory called once per agent. Gated-off
    agents are not in a MAS, so they are not in the graph; the decision agent is the single leaf.
    """
    missing = sorted({agent.role for agent in mas.agents if agent.role not in roles})
    if missing:
        raise AgentBalanceError(
            f"the MAS uses role(s) {', '.join(map(repr, missing))} that the role library {roles.source} "
            f"does not have; known: {', '.join(roles.names)}"
        )
    names = autogen_names(mas)
    builder = DiGraphBuilder()
    made: dict[str, ChatCompletionClient] = {}
    for agent_id in mas.topological_order():
        agent = mas.agent(agent_id)
        role = roles[agent.role]
        slot = AgentSlot(agent, names[agent_id], role)
        client = made[agent_id] = _client_for(clients, slot)
        inner = AssistantAgent(slot.name, model_client=client, system_message=role.prompt, description=role.description)
        visible = [PerSourceFilter(source=TASK_SOURCE, position="first", count=1)]
        visible += [PerSourceFilter(source=names[p], position="last", count=1) for p in mas.predecessors(agent_id)]
        builder.add_node(MessageFilterAgent(slot.name, inner, MessageFilterConfig(per_source=visible)))
    for source, target in mas.edges:
        builder.add_edge(names[source], names[target])
    try:
        graph = builder.build()
    except ValueError as error:
        raise AgentBalanceError(f"AutoGen rejects the graph of {mas!r}: {error}") from None
    leaves = graph.get_leaf_nodes()
    if leaves != {names[mas.decision]}:
        raise AgentBalanceError(
            f"{mas!r}: the decision agent {mas.decision!r} must be the only agent without successors, "
            f"found {', '.join(sorted(leaves))}"
        )
    participants = [builder.agents[names[agent_id]] for agent_id in mas.topological_order()]
    return FlowBuild(GraphFlow(participants, graph=graph), graph, names, made)


def _client_for(clients: ClientSource, slot: AgentSlot) -> ChatCompletionClient:
    if isinstance(clients, Mapping):
        if slot.agent.backbone not in clients:
            raise AgentBalanceError(
                f"no model client for backbone {slot.agent.backbone!r} (agent {slot.agent.id!r}); "
                f"clients are given for: {', '.join(sorted(clients)) or 'none'}"
            )
        client = clients[slot.agent.backbone]
    else:
        client = clients(slot)
    if not isinstance(client, ChatCompletionClient):
        raise AgentBalanceError(
            f"the model client of agent {slot.agent.id!r} is a {type(client).__name__}, "
            "not an autogen_core ChatCompletionClient"
        )
    return client


# ---- a ChatCompletionClient backed by an agentbalance world


class WorldClients:
    """Model clients backed by an agentbalance world for ONE flow (one task): a factory for `build_graphflow`.

    It gives each agent a WorldChatClient bound to that agent's role and backbone and to the task's
    Query (so the simulated world grades against the query it is given), and it remembers what each
    agent said, so a later agent's incoming messages reach the world as the completions they were.
    Only messages an agent actually received become its inputs. Without a Query, the task text is used.
    """

    def __init__(self, world: World, query: Query | None = None) -> None:
        if not callable(getattr(world, "complete", None)) and not callable(getattr(world, "answer", None)):
            raise AgentBalanceError(f"{world!r} is not an agentbalance world (it has neither complete nor answer)")
        self.world = world
        self.query = query
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
        call = AgentCall(self.slot.agent, self.slot.role, self.backbone, self._query(messages), self._inputs(messages))
        self.calls.append(call)
        try:
            completion = await self._complete(call)
        except AgentCallFailed as failure:
            self.failures.append(failure)
            text = f"[{self.slot.name}: call failed: {failure}]"
            self.episode.record(self.slot.name, text, None)
            return self._result(text, failure.prompt_tokens, 0, "unknown", cached=False)
        self.completions.append(completion)
        upstream = Upstream(self.slot.agent.id, self.slot.role, self.backbone, completion)
        self.episode.record(self.slot.name, completion.text, upstream)
        return self._result(
            completion.text, completion.prompt_tokens, completion.completion_tokens, "stop", completion.cached
        )

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[Any] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The whole completion as one chunk, then the result (worlds do not stream)."""
        result = await self.create(messages, tools=tools, cancellation_token=cancellation_token)
        assert isinstance(result.content, str)
        yield result.content
        yield result

    async def _complete(self, call: AgentCall) -> Completion:
        complete = getattr(self.episode.world, "complete", None)
        if callable(complete):
            return await complete(call)
        return self.episode.world.answer(call)  # type: ignore[attr-defined]

    def _query(self, messages: Sequence[LLMMessage]) -> Query:
        if self.episode.query is not None:
            return self.episode.query
        for message in messages:
            if getattr(message, "source", None) == TASK_SOURCE and isinstance(message.content, str):
                digest = hashlib.sha256(message.content.encode()).hexdigest()[:12]
                return Query(id=f"task-{digest}", question=message.content)
        raise AgentBalanceError(f"agent {self.slot.name!r} received no task message (source {TASK_SOURCE!r})")

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


class _TimedClient(ChatCompletionClient):
    """Wraps one agent's client for one flow to measure the wall seconds of its calls; delegates the rest."""

    def __init__(self, inner: ChatCompletionClient) -> None:
        self.inner = inner
        self.seconds = 0.0

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        started = time.perf_counter()
        try:
            return await self.inner.create(messages, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        started = time.perf_counter()
        try:
            async for chunk in self.inner.create_stream(messages, **kwargs):
                yield chunk
        finally:
            self.seconds += time.perf_counter() - started

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


# ---- the plug-in over a user's AutoGen team


def roles_from_agents(
    agents: Sequence[AssistantAgent],
    decision: str,
    critics: Sequence[str] = (),
    domains: Mapping[str, Sequence[str]] | None = None,
) -> RoleSet:
    """A role library from a user's AutoGen agents: name, description and system message of each.

    `decision` names the agent whose answer is the team's answer; `critics` the agents that review
    others' answers (kind critic; all others are solvers); `domains` (optional) the domains an agent
    is expert in (general, math, code), which the simulated world's role fit reads.
    """
    domains = dict(domains or {})
    known = [getattr(agent, "name", None) for agent in agents]
    for label, names in (("decision", [decision]), ("critics", list(critics)), ("domains", list(domains))):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise AgentBalanceError(
                f"{label}: {', '.join(map(repr, unknown))} is not one of the agents ({', '.join(map(str, known))})"
            )
    roles = []
    for agent in agents:
        prompt = _system_message(agent)
        description = agent.description if agent.description != _DEFAULT_AGENT_DESCRIPTION else prompt
        kind = RoleKind.DECISION if agent.name == decision else RoleKind.SOLVER
        if agent.name in critics and kind is RoleKind.SOLVER:
            kind = RoleKind.CRITIC
        roles.append(
            Role(
                name=agent.name,
                kind=kind,
                description=description,
                prompt=prompt,
                domains=tuple(domains.get(agent.name, ())),
            )
        )
    return RoleSet(roles, source="<AutoGen agents>")


def _system_message(agent: object) -> str:
    """An AssistantAgent's system message (AgentChat 0.7 keeps it private and exposes it only in its config)."""
    if not isinstance(agent, AssistantAgent):
        raise AgentBalanceError(
            f"agent {getattr(agent, 'name', agent)!r} is a {type(agent).__name__}; the plug-in takes AssistantAgents "
            "(their system messages become the roles)"
        )
    messages = agent._system_messages
    if not messages or not isinstance(messages[0].content, str) or not messages[0].content.strip():
        raise AgentBalanceError(f"agent {agent.name!r} has no system message: it would be a role without a prompt")
    return messages[0].content


class QueryEncoder(Protocol):
    """What the controller needs to see a query: its embedding (agentbalance.encoders.TextEncoder)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


Parse = Callable[[str, Query], "str | None"]
Grader = Callable[[Query, "str | None"], "bool | None"]


@dataclass(frozen=True)
class BalancedRun:
    """One task through the plug-in: AutoGen's TaskResult, agentbalance's Trace, and the MAS that ran."""

    result: TaskResult
    trace: Trace
    mas: MAS
    names: dict[str, str] = field(default_factory=dict)  # MAS agent id -> AutoGen agent name

    @property
    def answer(self) -> str | None:
        return self.trace.answer


class GraphFlowRunner:
    """Runs any MAS as a fresh AutoGen GraphFlow per task and accounts for it as agentbalance's runner does.

    Exactly one of `clients` (backbone name -> model client, or a factory per agent) and `world` (every
    call answered by an agentbalance world). `catalog` prices the usage (default: the world's). Answers
    of ordinary clients are read by `parse` (default: an option letter, else the final math answer)
    and graded by `grader` when one is given; a world grades its own.
    """

    def __init__(
        self,
        roles: RoleSet,
        *,
        clients: ClientSource | None = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        parse: Parse | None = None,
        grader: Grader | None = None,
    ) -> None:
        if (clients is None) == (world is None):
            raise AgentBalanceError("give exactly one of clients= (model clients per backbone) and world=")
        catalog = catalog or (world.catalog if world is not None else None)
        if catalog is None:
            raise AgentBalanceError("catalog= is needed to price the usage of the given model clients")
        self.roles = roles
        self.clients = clients
        self.world = world
        self.catalog = catalog
        self.parse = parse
        self.grader = grader

    async def run_many(self, pairs: Sequence[tuple[MAS, str | Query]], concurrency: int = 8) -> list[BalancedRun]:
        """Several (MAS, task) pairs, at most `concurrency` flows at once; order kept."""
        if concurrency < 1:
            raise AgentBalanceError(f"concurrency must be at least 1, got {concurrency}")
        limit = asyncio.Semaphore(concurrency)

        async def one(mas: MAS, task: str | Query) -> BalancedRun:
            async with limit:
                return await self.run(mas, task)

        return list(await asyncio.gather(*(one(mas, task) for mas, task in pairs)))

    async def run(self, mas: MAS, task: str | Query) -> BalancedRun:
        """Run `mas` on one task as a fresh GraphFlow and account for it."""
        query = as_query(task)
        mas.check_against(self.catalog, self.roles)
        episode = WorldClients(self.world, query) if self.world is not None else None
        timed: dict[str, _TimedClient] = {}

        def client(slot: AgentSlot) -> ChatCompletionClient:
            inner = episode(slot) if episode is not None else _client_for(self.clients, slot)  # type: ignore[arg-type]
            timed[slot.agent.id] = _TimedClient(inner)
            return timed[slot.agent.id]

        built = build_graphflow(mas, client, self.roles)
        started = time.perf_counter()
        result = await built.flow.run(task=query.render())
        wall_s = time.perf_counter() - started
        trace = self._trace(mas, query, built, result, timed, wall_s)
        return BalancedRun(result, trace, mas, built.names)

    # ---- accounting

    def _trace(
        self,
        mas: MAS,
        query: Query,
        built: FlowBuild,
        result: TaskResult,
        timed: Mapping[str, _TimedClient],
        wall_s: float,
    ) -> Trace:
        """Usage per agent summed from `models_usage`, USD at catalog prices, latency on the critical path."""
        ids = built.ids
        usage = {agent.id: [0, 0] for agent in mas.agents}
        texts: dict[str, str] = {}
        for message in result.messages:
            agent_id = ids.get(message.source)
            if agent_id is None:
                continue
            if message.models_usage is not None:
                usage[agent_id][0] += message.models_usage.prompt_tokens
                usage[agent_id][1] += message.models_usage.completion_tokens
            if isinstance(message, BaseChatMessage):
                texts[agent_id] = message.to_text()
        latencies = {agent_id: self._latency(timed[agent_id]) for agent_id in timed}
        schedule = modelled_schedule(mas, latencies)
        agents = []
        final: tuple[str | None, bool | None] = (None, None)
        for agent in mas.agents:
            world_client = timed[agent.id].inner if isinstance(timed[agent.id].inner, WorldChatClient) else None
            completion = world_client.completions[-1] if world_client and world_client.completions else None
            text = texts.get(agent.id)
            error = _agent_error(world_client, text)
            if completion is not None:
                answer, correct = completion.answer, completion.correct
            else:
                answer, correct = (self._parse(text, query) if text and error is None else None), None
            if agent.id == mas.decision:
                final = (answer, correct)
            prompt_tokens, completion_tokens = usage[agent.id]
            start, end = schedule[agent.id]
            agents.append(
                AgentTrace(
                    id=agent.id,
                    role=agent.role,
                    backbone=agent.backbone,
                    answer=answer,
                    text=text or "",
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    reasoning_tokens=sum(c.reasoning_tokens for c in world_client.completions) if world_client else 0,
                    cost_usd=self.catalog[agent.backbone].call_cost_usd(prompt_tokens, completion_tokens),
                    latency_s=latencies[agent.id],
                    start_s=start,
                    end_s=end,
                    error=error,
                    inputs=tuple(mas.predecessors(agent.id)),
                )
            )
        answer, correct = final
        if correct is None and query.answer is not None:
            if answer is None:
                correct = False  # no answer is a wrong answer when the gold is known
            elif self.grader is not None:
                correct = self.grader(query, answer)
        world = self.world.name if self.world is not None else "autogen"
        return Trace.summed(query.id, answer, correct, tuple(agents), schedule[mas.decision][1], wall_s, world)

    @staticmethod
    def _latency(timed: _TimedClient) -> float:
        """A world's modelled latency when the client is world-backed, else the measured seconds of the calls."""
        inner = timed.inner
        if isinstance(inner, WorldChatClient):
            return sum(c.latency_s for c in inner.completions) + sum(f.latency_s for f in inner.failures)
        return timed.seconds

    def _parse(self, text: str, query: Query) -> str | None:
        if self.parse is not None:
            return self.parse(text, query)
        from agentbalance.worlds.live import default_parse

        return default_parse(text, query)


class AgentBalanceTeam:
    """A user's AutoGen agents, made budget-aware: per task the controller picks which agents run, on which
    backbone, and who hears whom; the MAS runs as a fresh GraphFlow (so no context leaks between tasks).

    Exactly one of `clients` (backbone name -> model client, or a factory per agent) and `world` (every
    call answered by an agentbalance world, offline for the simulated and replay worlds). `catalog` prices
    the usage (default: the world's). `budget` is the controller's condition input: the budget it was
    trained for (a budget-conditioned controller: the budget it serves, with its calibrated `delta`).
    The user's agents lend their names, descriptions and system messages; their own model clients,
    tools and memory are not used.
    """

    def __init__(
        self,
        agents: Sequence[AssistantAgent],
        decision: str,
        controller: Controller,
        *,
        clients: ClientSource | None = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        budget: Budget | None = None,
        delta: float | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        encoder: QueryEncoder | None = None,
        parse: Parse | None = None,
        grader: Grader | None = None,
    ) -> None:
        self.roles = roles_from_agents(agents, decision, critics, domains)
        self.runner = GraphFlowRunner(
            self.roles, clients=clients, world=world, catalog=catalog, parse=parse, grader=grader
        )
        self.controller = controller
        self.budget = budget
        self.delta = delta
        self._encoder = encoder
        self._check_controller()

    @classmethod
    def from_run(
        cls,
        folder: str | Path,
        agents: Sequence[AssistantAgent],
        decision: str,
        *,
        clients: ClientSource | None = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        budget: Budget | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        encoder: QueryEncoder | None = None,
        parse: Parse | None = None,
        grader: Grader | None = None,
    ) -> AgentBalanceTeam:
        """A team over a controller saved by `agentbalance build` (trained on these agents' roles): at the
        budget it was built for, or, for a budget-conditioned one, at `budget` within its range."""
        from agentbalance.encoders import TextEncoder
        from agentbalance.experiment import world_catalogs
        from agentbalance.policy.context import ControllerCatalogs
        from agentbalance.train.build import load_controller, run_catalogs, serving_budget

        roles = roles_from_agents(agents, decision, critics, domains)
        seen = None  # the backbones as trained on, unless the team has others (then they are pooled afresh)
        if catalog is not None:
            seen = ControllerCatalogs(catalog, catalog)
        elif world is not None:
            seen = world_catalogs(world)
        encoder = encoder or TextEncoder()
        controller, config = load_controller(Path(folder), seen, roles, encoder)  # type: ignore[arg-type]
        if catalog is None and world is None:
            catalog = run_catalogs(Path(folder), config).described
        served, delta = serving_budget(config, budget)
        return cls(
            agents,
            decision,
            controller,
            clients=clients,
            world=world,
            catalog=catalog,
            budget=served,
            delta=delta,
            critics=critics,
            domains=domains,
            encoder=encoder,
            parse=parse,
            grader=grader,
        )

    def _check_controller(self) -> None:
        context = self.controller.context
        if tuple(context.role_names) != tuple(self.roles.names):
            raise AgentBalanceError(
                f"the controller was trained on roles {list(context.role_names)}, not on these agents "
                f"{list(self.roles.names)} (same names, same order)"
            )
        if context.role_names[context.decision_index] != self.roles.decision.name:
            raise AgentBalanceError(
                f"the controller's decision role is {context.role_names[context.decision_index]!r}, "
                f"not {self.roles.decision.name!r}"
            )
        catalog, clients = self.runner.catalog, self.runner.clients
        unknown = [name for name in context.backbone_names if name not in catalog]
        if unknown:
            raise AgentBalanceError(
                f"the controller chooses among backbones {', '.join(unknown)} that catalog {catalog.source} "
                "does not price"
            )
        if isinstance(clients, Mapping):
            missing = [name for name in context.backbone_names if name not in clients]
            if missing:
                raise AgentBalanceError(
                    f"no model client for backbone(s) {', '.join(missing)}, which the controller may choose"
                )

    @property
    def encoder(self) -> QueryEncoder:
        if self._encoder is None:
            from agentbalance.encoders import TextEncoder

            self._encoder = TextEncoder()
        return self._encoder

    # ---- deciding

    def plan(self, tasks: Sequence[str | Query]) -> list[MAS]:
        """The MAS the controller builds for each task (one batched forward pass)."""
        import torch

        queries = [as_query(task) for task in tasks]
        if not queries:
            return []
        vectors = np.asarray(self.encoder.encode([q.render() for q in queries]), dtype=np.float32)
        embeddings = torch.from_numpy(vectors.copy())
        ids = [q.id for q in queries]
        return self.controller.construct(embeddings, self._condition(len(queries)), ids, delta=self.delta)

    def _condition(self, batch: int) -> torch.Tensor:
        from agentbalance.budgets import Budget
        from agentbalance.policy.condition import budget_condition

        return budget_condition(self.budget or Budget(), batch)

    # ---- running

    async def run(self, task: str | Query) -> BalancedRun:
        """Build this task's MAS and run it as a fresh GraphFlow."""
        query = as_query(task)
        (mas,) = self.plan([query])
        return await self.run_mas(mas, query)

    async def run_many(self, tasks: Sequence[str | Query], concurrency: int = 8) -> list[BalancedRun]:
        """Several tasks, planned in one batch and run concurrently (at most `concurrency` flows at once)."""
        queries = [as_query(task) for task in tasks]
        pairs = list(zip(self.plan(queries), queries, strict=True))
        return await self.runner.run_many(pairs, concurrency)

    async def run_mas(self, mas: MAS, task: str | Query) -> BalancedRun:
        """Run a given MAS over these agents' roles (e.g. the team as the user wrote it) the same way."""
        return await self.runner.run(mas, task)


def _agent_error(world_client: WorldChatClient | None, text: str | None) -> str | None:
    if world_client is not None and world_client.failures:
        return str(world_client.failures[-1]) or type(world_client.failures[-1]).__name__
    if text is None:
        return "the agent sent no message"
    return None


def as_query(task: str | Query) -> Query:
    """A task as a Query: a Query as it is, a text with an id derived from the text (same text, same id)."""
    if isinstance(task, Query):
        return task
    if not isinstance(task, str) or not task.strip():
        raise AgentBalanceError(f"a task must be a non-empty question text or a Query, got {task!r}")
    return Query(id=f"task-{hashlib.sha256(task.encode()).hexdigest()[:12]}", question=task)


# ---- a standalone script per MAS


def autogen_script(mas: MAS, catalog: Catalog, roles: RoleSet, query: str | None = None) -> str:
    """A runnable Python script that builds this MAS as an AutoGen GraphFlow over OpenAI-compatible clients.

    It needs AutoGen only (not agentbalance). Model ids and base URLs come from the catalog; API keys
    from the environment at run time (the backbone's `api_key_env`, else $AGENTBALANCE_API_KEY, else
    $OPENAI_API_KEY), never from this file. `build_flow(clients)` takes the caller's own clients.
    """
    mas.check_against(catalog, roles)
    names = autogen_names(mas)
    agents = [
        {
            "name": names[agent_id],
            "id": agent_id,
            "role": mas.agent(agent_id).role,
            "backbone": mas.agent(agent_id).backbone,
            "inputs": [names[p] for p in mas.predecessors(agent_id)],
            "description": roles[mas.agent(agent_id).role].description,
            "system_message": roles[mas.agent(agent_id).role].prompt,
        }
        for agent_id in mas.topological_order()
    ]
    used = dict.fromkeys(agent.backbone for agent in mas.agents)
    backbones = {name: _backbone_spec(catalog[name]) for name in used}
    summary = ", ".join(f"{a['name']} ({a['role']} on {a['backbone']})" for a in agents)
    header = (
        f'"""AutoGen GraphFlow of an agentbalance MAS (query {mas.query_id or "-"}, pool {mas.pool}): '
        f"{len(agents)} agent(s), {len(mas.edges)} edge(s).\n\n"
        f"Agents: {summary}.\n"
        'Run: python THIS_FILE.py "your question"   (needs autogen-agentchat and autogen-ext[openai] 0.7)\n'
        "Endpoint per backbone: its base_url below, else $AGENTBALANCE_BASE_URL, else OpenAI's. API key: the\n"
        "variable named in its api_key_env, else $AGENTBALANCE_API_KEY, else $OPENAI_API_KEY; never in this file.\n"
        "build_flow(clients) takes your own model clients (backbone name -> ChatCompletionClient) instead.\n"
        '"""\n'
    )
    data = "\n\n".join(
        [
            "# In topological order; an agent sees the task and the last message of each of its inputs, nothing else.",
            f"AGENTS = {_literal(agents)}",
            f"EDGES = {_literal([[names[s], names[t]] for s, t in mas.edges])}",
            f"DECISION = {names[mas.decision]!r}",
            f"BACKBONES = {_literal(backbones)}",
            f"MODEL_INFO = {_literal(dict(WORLD_MODEL_INFO, family=str(ModelFamily.UNKNOWN)))}",
            f"QUERY = {query!r}",
        ]
    )
    return header + _SCRIPT_IMPORTS + "\n" + data + "\n" + _SCRIPT_BODY


def _backbone_spec(backbone: Backbone) -> dict[str, Any]:
    """Model id, endpoint, key variable NAME, and client arguments (SDK keys as such, others in extra_body)."""
    request: dict[str, Any] = {"temperature": 0.0, **backbone.request}
    sdk = _openai_create_arguments()
    arguments = {k: v for k, v in request.items() if v is not None and k in sdk}
    extra = {k: v for k, v in request.items() if v is not None and k not in sdk}
    if extra:
        arguments["extra_body"] = extra
    return {
        "model": backbone.model_id,
        "base_url": backbone.base_url,
        "api_key_env": backbone.api_key_env,
        "arguments": arguments,
    }


def _openai_create_arguments() -> frozenset[str]:
    """Keyword arguments of the OpenAI SDK's chat.completions.create (an AutoGen client takes them as is)."""
    from openai.resources.chat.completions import AsyncCompletions

    reserved = {"self", "messages", "model", "stream", "n", "extra_headers", "extra_query", "extra_body", "timeout"}
    return frozenset(inspect.signature(AsyncCompletions.create).parameters) - reserved


def _literal(value: object, indent: int = 0) -> str:
    """Plain data (str, number, bool, None, list, dict) as a Python literal laid out like hand-written code."""
    inline = repr(value)
    if not isinstance(value, dict | list) or not value or (len(inline) <= 80 and "{" not in inline[1:]):
        return inline
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        items = [f"{pad}{key!r}: {_literal(item, indent + 4)}," for key, item in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + "\n".join(f"{pad}{_literal(item, indent + 4)}," for item in value) + "\n" + " " * indent + "]"


_SCRIPT_IMPORTS = """
from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping

from autogen_agentchat.agents import AssistantAgent, MessageFilterAgent, MessageFilterConfig, PerSourceFilter
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow
from autogen_core.models import ChatCompletionClient
"""

_SCRIPT_BODY = '''

def api_key(backbone: str) -> str:
    """The backbone's key from the environment: its own variable if it names one, else the common ones."""
    own = BACKBONES[backbone]["api_key_env"]
    names = [own] if own else ["AGENTBALANCE_API_KEY", "OPENAI_API_KEY"]
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    raise SystemExit(f"no API key for backbone {backbone!r}: set ${' or $'.join(names)}")


def openai_clients() -> dict[str, ChatCompletionClient]:
    """One OpenAI-compatible client per backbone of this MAS."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    return {
        name: OpenAIChatCompletionClient(
            model=spec["model"],
            base_url=spec["base_url"] or os.environ.get("AGENTBALANCE_BASE_URL"),
            api_key=api_key(name),
            model_info=MODEL_INFO,
            **spec["arguments"],
        )
        for name, spec in BACKBONES.items()
    }


def build_flow(clients: Mapping[str, ChatCompletionClient] | None = None) -> GraphFlow:
    """The MAS as a GraphFlow; `clients` (backbone name -> client) replaces the OpenAI clients."""
    clients = openai_clients() if clients is None else clients
    builder = DiGraphBuilder()
    for agent in AGENTS:
        inner = AssistantAgent(
            agent["name"],
            model_client=clients[agent["backbone"]],
            system_message=agent["system_message"],
            description=agent["description"],
        )
        visible = [PerSourceFilter(source="user", position="first", count=1)]
        visible += [PerSourceFilter(source=source, position="last", count=1) for source in agent["inputs"]]
        builder.add_node(MessageFilterAgent(agent["name"], inner, MessageFilterConfig(per_source=visible)))
    for source, target in EDGES:
        builder.add_edge(source, target)
    return GraphFlow(builder.get_participants(), graph=builder.build())


async def main(task: str) -> None:
    result = await build_flow().run(task=task)
    for message in result.messages:
        if message.models_usage is not None:
            usage = message.models_usage
            print(f"[{message.source}] {usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens")
    answers = [message.to_text() for message in result.messages if message.source == DECISION]
    print(answers[-1] if answers else "(the decision agent sent no message)")


if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or QUERY
    if not question:
        raise SystemExit('usage: python THIS_FILE.py "your question"')
    asyncio.run(main(question))
'''
