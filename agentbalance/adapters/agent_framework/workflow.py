"""A MAS as a Microsoft Agent Framework workflow: one executor per MAS agent, wired by the MAS's edges (fan-in where
an agent has several inputs), each taking its turn through agentbalance's one execution module.

It holds Agent Framework's calls only: what runs or is skipped, the prompts, the usage and its price are the
adapters' shared core (`adapters.driving`) over `runtime.execution`. It never decides the MAS.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_framework import (
    Executor,
    Message,
    SupportsChatGetResponse,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunResult,
    handler,
)

from agentbalance.adapters.driving import (
    AdapterRunner,
    AgentSlot,
    FrameworkRun,
    Reply,
    Turn,
    check_roles,
    pick_client,
    request_arguments,
    take_turn,
)
from agentbalance.adapters.names import agent_names
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.worlds.base import AgentCall

START = "task"  # the start executor's id: it hands the task to the agents without inputs
RESERVED = frozenset({START})


@dataclass(frozen=True)
class Task:
    """The task, as the start executor hands it to the agents without inputs."""

    text: str


@dataclass(frozen=True)
class Said:
    """What one agent said, as its successors receive it: its name, id and text."""

    source: str
    agent_id: str
    text: str


TurnOf = Callable[[str], Awaitable[Turn]]  # an agent id -> its turn, taken through the execution


class StartExecutor(Executor):
    """Hands the task to every agent without inputs (the workflow has one start executor; a MAS may have many)."""

    @handler
    async def begin(self, task: Task, ctx: WorkflowContext[Task]) -> None:
        await ctx.send_message(task)


class MASAgentExecutor(Executor):
    """One MAS agent in the workflow: when its input(s) arrive (all of them: a fan-in), it takes its turn through
    the execution (runs, or is skipped as the execution decides) and sends what it says on; the decision agent
    yields it as the workflow's output."""

    def __init__(self, slot: AgentSlot, turn: TurnOf, decision: bool) -> None:
        super().__init__(id=slot.name)
        self.slot = slot
        self.turn = turn
        self.decision = decision

    @handler
    async def on_task(self, task: Task, ctx: WorkflowContext[Said, Said]) -> None:
        await self._take_turn(ctx)

    @handler
    async def on_input(self, said: Said, ctx: WorkflowContext[Said, Said]) -> None:
        await self._take_turn(ctx)

    @handler
    async def on_inputs(self, said: list[Said], ctx: WorkflowContext[Said, Said]) -> None:
        await self._take_turn(ctx)

    async def _take_turn(self, ctx: WorkflowContext[Said, Said]) -> None:
        turn = await self.turn(self.slot.agent.id)
        said = Said(self.slot.name, self.slot.agent.id, turn.text)
        if self.decision:
            await ctx.yield_output(said)
        else:
            await ctx.send_message(said)


@dataclass(frozen=True)
class WorkflowBuild:
    """A workflow and how it maps to its MAS: the executor name of each agent id."""

    workflow: Workflow
    names: dict[str, str]  # MAS agent id -> executor id


def build_workflow(mas: MAS, roles: RoleSet, turn: TurnOf) -> WorkflowBuild:
    """The MAS as a WorkflowBuilder workflow: a start executor fanning the task out to the agents without inputs,
    one executor per agent, a single edge from a lone input and a fan-in edge group from several (the agent runs
    once all have spoken), the decision agent's message as the output. `turn` takes an agent's turn."""
    check_roles(mas, roles)
    names = agent_names(mas, RESERVED)
    executors = {
        agent_id: MASAgentExecutor(
            AgentSlot(mas.agent(agent_id), names[agent_id], roles[mas.agent(agent_id).role]),
            turn,
            agent_id == mas.decision,
        )
        for agent_id in mas.topological_order()
    }
    start = StartExecutor(id=START)
    builder = WorkflowBuilder(start_executor=start, name="agentbalance-mas", output_from=[executors[mas.decision]])
    sources = [executors[agent_id] for agent_id in mas.topological_order() if not mas.predecessors(agent_id)]
    if len(sources) == 1:
        builder.add_edge(start, sources[0])
    else:
        builder.add_fan_out_edges(start, sources)
    for agent_id, executor in executors.items():
        inputs = [executors[p] for p in mas.predecessors(agent_id)]
        if len(inputs) == 1:
            builder.add_edge(inputs[0], executor)
        elif inputs:
            builder.add_fan_in_edges(inputs, executor)
    try:
        workflow = builder.build()
    except Exception as error:  # Agent Framework's validation: a graph it cannot run
        raise AgentBalanceError(f"Agent Framework rejects the workflow of {mas!r}: {error}") from None
    return WorkflowBuild(workflow, names)


class WorkflowRunner(AdapterRunner[SupportsChatGetResponse]):
    """Runs any MAS as a fresh Agent Framework workflow per task and accounts for it as agentbalance's runner does:
    both drive the same `Execution`. With `world=` every call is the world's (simulated, replay, live); with
    `clients=` (backbone name -> Agent Framework chat client, or a factory per AgentSlot) each call goes through
    the agent's chat client with its backbone's request options (`request_options=False`: none), and its usage
    is the response's `usage_details`, priced at the catalog's prices. Other settings: `AdapterRunner`'s."""

    framework = "agent-framework"

    async def run(self, mas: MAS, task: str | Query) -> FrameworkRun[WorkflowRunResult]:
        """Run `mas` on one task as a fresh workflow; its trace is the execution's."""
        execution = self.execution(mas, task)
        names = agent_names(mas, RESERVED)
        models = {
            agent.id: self.model(AgentSlot(agent, names[agent.id], self.roles[agent.role]), execution)
            for agent in mas.agents
        }

        async def turn(agent_id: str) -> Turn:
            return await take_turn(execution, agent_id, models[agent_id])

        built = build_workflow(mas, self.roles, turn)
        started = time.perf_counter()
        result = await built.workflow.run(Task(execution.query.render()))
        return FrameworkRun(result, self.trace(execution, time.perf_counter() - started), mas, built.names)

    def client(self, slot: AgentSlot) -> SupportsChatGetResponse:
        clients: Any = self.clients
        client: SupportsChatGetResponse = pick_client(
            clients, slot, SupportsChatGetResponse, "an Agent Framework chat client (get_response)"
        )
        return client

    async def ask(self, client: SupportsChatGetResponse, call: AgentCall) -> Reply:
        messages = [Message(role=m["role"], contents=[m["content"]]) for m in call.messages]
        options = request_arguments(call.backbone) if self.request_options else {}
        response = await client.get_response(messages, options=options)  # type: ignore[arg-type]
        usage: Mapping[str, Any] = response.usage_details or {}
        return Reply(response.text or "", usage.get("input_token_count") or 0, usage.get("output_token_count") or 0)
