"""What every framework adapter shares when it runs a MAS: the agent slots and their clients, one agent's turn
through the one execution module (run or skip, the call, the priced result), and the runner's settings.

It holds no framework's calls (each adapter's module does) and never decides, schedules or grades on its own:
`runtime.execution.Execution` does, for every path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agentbalance.agreement import answers_agree
from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query, as_query
from agentbalance.roles import Role, RoleSet
from agentbalance.runtime.execution import NO_CAPS, AgentResult, Caps, Execution, Grader, Skip
from agentbalance.runtime.runner import call_world
from agentbalance.runtime.trace import Trace
from agentbalance.worlds.base import AgentCall, Completion, SameAnswer, World

Parse = Callable[[str, Query], "str | None"]  # a reply's answer, as the task reads it
ModelCall = Callable[[AgentCall], Awaitable[AgentResult]]  # one agent's call, answered and accounted
NO_MESSAGE = "the agent sent no message"  # why an agent the framework never ran failed
ClientT = TypeVar("ClientT")
ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class AgentSlot:
    """One MAS agent as a framework will run it: what a client factory needs to pick its model client."""

    agent: Agent  # id, role name, backbone name
    name: str  # its name in the framework
    role: Role


@dataclass(frozen=True)
class Reply:
    """What a framework's model client answered to one call: its text and the usage it reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int


def pick_client(clients: Any, slot: AgentSlot, kind: type | tuple[type, ...], what: str) -> Any:
    """The model client of one agent: by its backbone from a mapping, or from a factory called with its slot;
    checked to be a `kind` (`what` names it in the error)."""
    if isinstance(clients, Mapping):
        if slot.agent.backbone not in clients:
            raise AgentBalanceError(
                f"no model client for backbone {slot.agent.backbone!r} (agent {slot.agent.id!r}); "
                f"clients are given for: {', '.join(sorted(clients)) or 'none'}"
            )
        client = clients[slot.agent.backbone]
    else:
        client = clients(slot)
    if not isinstance(client, kind):
        raise AgentBalanceError(f"the model client of agent {slot.agent.id!r} is a {type(client).__name__}, not {what}")
    return client


def check_roles(mas: MAS, roles: RoleSet) -> None:
    """Every role the MAS uses is in the role library (the framework's agents take their prompts from it)."""
    missing = sorted({agent.role for agent in mas.agents if agent.role not in roles})
    if missing:
        raise AgentBalanceError(
            f"the MAS uses role(s) {', '.join(map(repr, missing))} that the role library {roles.source} "
            f"does not have; known: {', '.join(roles.names)}"
        )


def default_parse(text: str, query: Query) -> str | None:
    """An option letter for multiple choice, else the final math answer (the live world's reading)."""
    from agentbalance.worlds.live import default_parse as live_parse

    return live_parse(text, query)


def priced(execution: Execution, agent_id: str, reply: Reply, seconds: float, parse: Parse) -> AgentResult:
    """A client's reply as the execution folds it in: the usage the framework reports, priced at the catalog's
    prices, the answer read by `parse`, the latency measured."""
    backbone = execution.catalog[execution.mas.agent(agent_id).backbone]
    cost = backbone.call_cost_usd(reply.prompt_tokens, reply.completion_tokens)
    answer = parse(reply.text, execution.query) if reply.text else None
    return AgentResult(Completion(reply.text, answer, reply.prompt_tokens, reply.completion_tokens, cost, seconds))


def client_failure(failure: Exception, seconds: float) -> AgentResult:
    """A failing client call, recorded as the runner records it (the flow carries on)."""
    return AgentResult(error=f"{type(failure).__name__}: {failure}", failed_latency_s=seconds)


def request_arguments(backbone: Backbone) -> dict[str, Any]:
    """A framework chat client's arguments for one backbone's calls, as the live world sends them: temperature 0,
    and the backbone's other request fields in `extra_body`, the completion limit under the catalog's own field
    name (clients that take a `max_tokens` argument may rename it, as Agent Framework and LangChain do)."""
    request = backbone.call_parameters(temperature=0.0)
    arguments: dict[str, Any] = {"temperature": request.pop("temperature")} if "temperature" in request else {}
    if request:
        arguments["extra_body"] = request
    return arguments


@dataclass(frozen=True)
class Turn:
    """One agent's turn: what the execution made of it, and the agents it made ready."""

    agent_id: str
    result: AgentResult
    skip: Skip | None
    ready: list[str]
    passed_on: Completion | None  # what its successors receive (a skip's output; None: nothing)

    @property
    def text(self) -> str:
        """What the agent says in the framework: what it passes on (its reply, a skip's output, a vote), else why
        it said nothing."""
        if self.passed_on is not None:
            return self.passed_on.text
        reason = self.skip.reason if self.skip is not None else f"call failed: {self.result.error}"
        return f"[{self.agent_id}: {reason}]"


async def take_turn(execution: Execution, agent_id: str, model: ModelCall) -> Turn:
    """Run or skip one agent whose inputs are done, as the execution decides: a skipped agent makes no call
    (a cap, agreeing inputs, a "never" agent); one that runs makes the execution's call (a conditional agent is
    asked afresh). The framework's node calls this and sends `Turn.text` on."""
    skip = decide_turn(execution, agent_id)
    if skip is not None:
        return skipped_turn(execution, agent_id, skip)
    return await called_turn(execution, agent_id, model)


def decide_turn(execution: Execution, agent_id: str) -> Skip | None:
    """Before the agent's call: the execution's decision (None: it runs), once its inputs are all done."""
    waiting = [p for p in execution.mas.predecessors(agent_id) if p not in execution.results]
    if waiting:
        raise AgentBalanceError(f"the framework ran agent {agent_id!r} before its input(s) {waiting} answered")
    return execution.decide(agent_id)


def skipped_turn(execution: Execution, agent_id: str, skip: Skip) -> Turn:
    """A skipped agent's turn: no call, no cost; it passes on what the skip carries."""
    ready = execution.skip(agent_id, skip)
    return Turn(agent_id, execution.results[agent_id], skip, ready, execution.passed_on(agent_id))


async def called_turn(execution: Execution, agent_id: str, model: ModelCall) -> Turn:
    """A running agent's turn: the execution's call, answered by `model`, folded in."""
    result = await model(execution.call(agent_id))
    ready = execution.finish(agent_id, result)
    return Turn(agent_id, result, None, ready, execution.passed_on(agent_id))


@dataclass(frozen=True)
class FrameworkRun(Generic[ResultT]):
    """One task through an adapter: the framework's own result, agentbalance's Trace, the MAS that ran, and the
    framework name of each agent id."""

    result: ResultT
    trace: Trace
    mas: MAS
    names: dict[str, str] = field(default_factory=dict)

    @property
    def answer(self) -> str | None:
        return self.trace.answer


class AdapterRunner(Generic[ClientT]):
    """The settings every framework runner shares, and its accounting: exactly one of `clients` (backbone name ->
    the framework's model client, or a factory per agent slot) and `world` (every call answered by an agentbalance
    world); `catalog` prices the usage (default: the world's); `parse` reads a client's answer (default: an option
    letter, else a stated math answer, else the whole reply); `grader` is the task's scorer; `same_answer` compares
    answers (conditional agents; default: `agreement.answers_agree` without a task, free text by meaning); `caps`
    are per-query caps; `request_options` sends each call with its backbone's request arguments
    (`request_arguments`; False: none, the client's own). Subclasses run one MAS on one task in their framework."""

    framework = "framework"

    def __init__(
        self,
        roles: RoleSet,
        *,
        clients: Mapping[str, ClientT] | Callable[[AgentSlot], ClientT] | None = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        parse: Parse | None = None,
        grader: Grader | None = None,
        caps: Caps | None = None,
        same_answer: SameAnswer | None = None,
        request_options: bool = True,
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
        self.caps = caps or NO_CAPS
        self.same_answer = same_answer or answers_agree(None, world)
        self.request_options = request_options

    async def run(self, mas: MAS, task: str | Query) -> FrameworkRun[Any]:
        raise NotImplementedError

    async def run_many(self, pairs: Sequence[tuple[MAS, str | Query]], concurrency: int = 8) -> list[Any]:
        """Several (MAS, task) pairs, at most `concurrency` at once; order kept."""
        if concurrency < 1:
            raise AgentBalanceError(f"concurrency must be at least 1, got {concurrency}")
        limit = asyncio.Semaphore(concurrency)

        async def one(mas: MAS, task: str | Query) -> Any:
            async with limit:
                return await self.run(mas, task)

        return list(await asyncio.gather(*(one(mas, task) for mas, task in pairs)))

    def execution(self, mas: MAS, task: str | Query) -> Execution:
        """A fresh execution of `mas` on the task, checked against the catalog and roles first."""
        mas.check_against(self.catalog, self.roles)
        return Execution(mas, as_query(task), self.roles, self.catalog, self.caps, self.same_answer)

    def trace(self, execution: Execution, wall_s: float) -> Trace:
        """The execution's trace; an agent the framework never ran (it stopped early) is a recorded failure."""
        for agent_id in execution.mas.topological_order():
            if agent_id not in execution.results:
                execution.finish(agent_id, AgentResult(error=NO_MESSAGE))
        world = self.world.name if self.world is not None else self.framework
        return execution.trace(world, wall_s, self.grader)

    def read_answer(self, text: str, query: Query) -> str | None:
        return (self.parse or default_parse)(text, query)

    def model(self, slot: AgentSlot, execution: Execution) -> ModelCall:
        """How one agent's call is answered: by the world, else by its client through `ask`, priced and timed."""
        if self.world is not None:
            world = self.world

            async def from_world(call: AgentCall) -> AgentResult:
                return await call_world(world, call)

            return from_world
        client = self.client(slot)

        async def from_client(call: AgentCall) -> AgentResult:
            started = time.perf_counter()
            try:
                reply = await self.ask(client, call)
            except AgentBalanceError:
                raise
            except Exception as failure:  # a client error: recorded, never silent, and the flow carries on
                return client_failure(failure, time.perf_counter() - started)
            return priced(execution, slot.agent.id, reply, time.perf_counter() - started, self.read_answer)

        return from_client

    def client(self, slot: AgentSlot) -> ClientT:
        """The framework's model client of one agent (checked by the subclass)."""
        raise NotImplementedError

    async def ask(self, client: ClientT, call: AgentCall) -> Reply:
        """One call through the framework's client: the call's messages (`call.messages`), its backbone's
        request parameters; the reply's text and reported usage."""
        raise NotImplementedError
