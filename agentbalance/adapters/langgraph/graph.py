"""A MAS as a LangGraph StateGraph: a node per agent, the MAS's edges (a waiting edge where an agent has several
inputs), and each conditional agent behind a gate whose conditional edge runs it or passes its inputs on.

It holds LangGraph's calls only: what runs or is skipped, the prompts, the usage and its price are the adapters'
shared core (`adapters.driving`) over `runtime.execution`. It never decides the MAS.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agentbalance.adapters.driving import (
    AdapterRunner,
    AgentSlot,
    FrameworkRun,
    Reply,
    Turn,
    called_turn,
    decide_turn,
    pick_client,
    request_arguments,
    skipped_turn,
    take_turn,
)
from agentbalance.adapters.names import agent_names
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.runtime.execution import Execution, Skip
from agentbalance.worlds.base import AgentCall

GATE, PASS, DONE = "__gate", "__pass", "__done"  # the suffixes of a conditional agent's extra nodes
RESERVED = frozenset({START, END})


class MASState(TypedDict):
    """The graph's state: the task, and what each agent said (by node name), merged as the agents speak."""

    task: str
    said: Annotated[dict[str, str], operator.or_]


Node = Callable[[MASState], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Steps:
    """How one MAS's nodes act: `turn` takes an unconditional agent's turn; a conditional agent's `gate` decides
    ("run" or "pass"), then `run` (its call) or `passed` (no call) speaks."""

    turn: Callable[[str], Awaitable[Turn]]
    gate: Callable[[str], Awaitable[Literal["run", "pass"]]]
    run: Callable[[str], Awaitable[Turn]]
    passed: Callable[[str], Awaitable[Turn]]


@dataclass(frozen=True)
class GraphBuild:
    """A compiled graph and how it maps to its MAS: the node name of each agent id."""

    graph: CompiledStateGraph[Any, Any, Any, Any]
    names: dict[str, str]  # MAS agent id -> node name


def exit_node(mas: MAS, agent_id: str, names: Mapping[str, str]) -> str:
    """The node whose end means the agent has spoken: its own, or a conditional agent's join node."""
    return names[agent_id] + DONE if mas.agent(agent_id).conditional else names[agent_id]


def build_graph(mas: MAS, steps: Steps) -> GraphBuild:
    """The MAS as a compiled StateGraph. An agent's node waits for all its inputs (a waiting edge from several);
    a conditional agent's inputs lead to its gate node, whose conditional edge goes to the agent's node (it runs)
    or to its pass node (the execution skips it), both joining at its done node, which its successors wait for."""
    names = agent_names(mas, RESERVED)
    graph = StateGraph(MASState)
    for agent_id in mas.topological_order():
        name = names[agent_id]
        if mas.agent(agent_id).conditional:
            graph.add_node(name + GATE, _noop)
            graph.add_node(name, _speaker(steps.run, agent_id, name))
            graph.add_node(name + PASS, _speaker(steps.passed, agent_id, name))
            graph.add_node(name + DONE, _noop)
            graph.add_conditional_edges(name + GATE, _router(steps.gate, agent_id, name), [name, name + PASS])
            graph.add_edge(name, name + DONE)
            graph.add_edge(name + PASS, name + DONE)
            entry = name + GATE
        else:
            graph.add_node(name, _speaker(steps.turn, agent_id, name))
            entry = name
        inputs = [exit_node(mas, p, names) for p in mas.predecessors(agent_id)]
        graph.add_edge(START if not inputs else inputs[0] if len(inputs) == 1 else inputs, entry)
    graph.add_edge(exit_node(mas, mas.decision, names), END)
    try:
        compiled = graph.compile(name="agentbalance-mas")
    except Exception as error:  # LangGraph's validation: a graph it cannot run
        raise AgentBalanceError(f"LangGraph rejects the graph of {mas!r}: {error}") from None
    return GraphBuild(compiled, names)


async def _noop(state: MASState) -> dict[str, Any]:
    return {}


def _speaker(step: Callable[[str], Awaitable[Turn]], agent_id: str, name: str) -> Node:
    async def speak(state: MASState) -> dict[str, Any]:
        turn = await step(agent_id)
        return {"said": {name: turn.text}}

    speak.__name__ = f"speak_{name}"
    return speak


def _router(gate: Callable[[str], Awaitable[str]], agent_id: str, name: str) -> Callable[[MASState], Awaitable[str]]:
    async def route(state: MASState) -> str:
        return name if await gate(agent_id) == "run" else name + PASS

    return route


def execution_steps(execution: Execution, models: Mapping[str, Any]) -> Steps:
    """The steps of one execution: each conditional agent's decision is taken once, at its gate, and kept for
    its pass node."""
    skips: dict[str, Skip] = {}

    async def turn(agent_id: str) -> Turn:
        return await take_turn(execution, agent_id, models[agent_id])

    async def gate(agent_id: str) -> Literal["run", "pass"]:
        skip = decide_turn(execution, agent_id)
        if skip is None:
            return "run"
        skips[agent_id] = skip
        return "pass"

    async def run(agent_id: str) -> Turn:
        return await called_turn(execution, agent_id, models[agent_id])

    async def passed(agent_id: str) -> Turn:
        return skipped_turn(execution, agent_id, skips.pop(agent_id))

    return Steps(turn, gate, run, passed)


class StateGraphRunner(AdapterRunner[BaseChatModel]):
    """Runs any MAS as a fresh LangGraph StateGraph per task and accounts for it as agentbalance's runner does:
    both drive the same `Execution`. With `world=` every call is the world's (simulated, replay, live); with
    `clients=` (backbone name -> LangChain chat model, or a factory per AgentSlot) each call is the model's
    `ainvoke` with its backbone's request arguments (`request_options=False`: none), its usage the reply's
    `usage_metadata`, priced at the catalog's prices. Other settings: `AdapterRunner`'s."""

    framework = "langgraph"

    async def run(self, mas: MAS, task: str | Query) -> FrameworkRun[dict[str, Any]]:
        """Run `mas` on one task as a fresh graph; its trace is the execution's, its result the final state."""
        execution = self.execution(mas, task)
        names = agent_names(mas, RESERVED)
        models = {
            agent.id: self.model(AgentSlot(agent, names[agent.id], self.roles[agent.role]), execution)
            for agent in mas.agents
        }
        built = build_graph(mas, execution_steps(execution, models))
        started = time.perf_counter()
        state = await built.graph.ainvoke({"task": execution.query.render(), "said": {}})
        return FrameworkRun(state, self.trace(execution, time.perf_counter() - started), mas, built.names)

    def client(self, slot: AgentSlot) -> BaseChatModel:
        clients: Any = self.clients
        model: BaseChatModel = pick_client(clients, slot, BaseChatModel, "a LangChain chat model (BaseChatModel)")
        return model

    async def ask(self, client: BaseChatModel, call: AgentCall) -> Reply:
        messages = [(m["role"], m["content"]) for m in call.messages]
        kwargs = request_arguments(call.backbone) if self.request_options else {}
        reply = await client.ainvoke(messages, **kwargs)
        usage: Mapping[str, Any] = getattr(reply, "usage_metadata", None) or {}
        text = reply.content if isinstance(reply.content, str) else str(reply.text)
        return Reply(text, usage.get("input_tokens") or 0, usage.get("output_tokens") or 0)
