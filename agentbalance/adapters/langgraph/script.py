"""`langgraph_script`: a MAS as a standalone, runnable LangGraph StateGraph script (needs langgraph and the openai
SDK, not agentbalance).

It writes text only (the graph's calls; the data, key lookup, prompts and conditional rules are the adapters'
common script parts); it never runs the script and never writes an API key into it.
"""

from __future__ import annotations

from agentbalance.adapters.langgraph.graph import DONE, GATE, PASS, RESERVED
from agentbalance.adapters.names import agent_names
from agentbalance.adapters.scripting import agent_entries, backbone_specs, script_data, script_header, spoken_script
from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet


def langgraph_script(mas: MAS, catalog: Catalog, roles: RoleSet, query: str | None = None) -> str:
    """A runnable Python script that builds this MAS as a LangGraph StateGraph over OpenAI-compatible endpoints:
    a node per agent, the MAS's edges (a waiting edge from several inputs), each conditional agent behind a gate
    node whose conditional edge runs it or passes its inputs' message on. Model ids, base URLs and request
    arguments (the catalog's completion limit included) come from the catalog; API keys from the environment at
    run time. Its `build_graph(clients)` takes the caller's own AsyncOpenAI clients."""
    mas.check_against(catalog, roles)
    names = agent_names(mas, RESERVED)
    agents = agent_entries(mas, roles, names)
    header = script_header(
        "LangGraph StateGraph",
        mas,
        agents,
        "langgraph 1.x and openai",
        "build_graph(clients) takes your own AsyncOpenAI clients (backbone name -> client) instead.",
    )
    suffixes = (f"GATE, PASS, DONE = {GATE!r}, {PASS!r}, {DONE!r}  # a conditional agent's extra nodes",)
    data = script_data(mas, agents, names, backbone_specs(mas, catalog), query, suffixes, note=True)
    return spoken_script(header, _IMPORTS, data, _BODY)


_IMPORTS = """
import asyncio
import logging
import operator
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
"""

_BODY = '''

def openai_clients() -> dict[str, Any]:
    """One OpenAI-compatible client per backbone of this MAS."""
    from openai import AsyncOpenAI

    return {
        name: AsyncOpenAI(base_url=spec["base_url"] or os.environ.get("AGENTBALANCE_BASE_URL"), api_key=api_key(name))
        for name, spec in BACKBONES.items()
    }


class State(TypedDict):
    """The task, what each agent said (None: nothing, its call failed) and the usage of its call."""

    task: str
    said: Annotated[dict[str, str | None], operator.or_]
    usage: Annotated[dict[str, dict[str, int]], operator.or_]


def inputs_said(agent: dict[str, Any], state: State) -> list[str | None]:
    return [state["said"].get(name) for name in agent["inputs"]]


def agent_node(agent: dict[str, Any], client: Any) -> Callable[[State], Awaitable[dict[str, Any]]]:
    """The node of one agent: it speaks (see `speak`), asking its backbone through the client when it must."""

    async def ask(agent: dict[str, Any], user: str) -> tuple[str, dict[str, int]]:
        spec = BACKBONES[agent["backbone"]]
        messages = [{"role": "system", "content": agent["system_message"]}, {"role": "user", "content": user}]
        response = await client.chat.completions.create(model=spec["model"], messages=messages, **spec["arguments"])
        usage = response.usage
        counted = {"prompt_tokens": usage.prompt_tokens if usage else 0}
        counted["completion_tokens"] = usage.completion_tokens if usage else 0
        return response.choices[0].message.content or "", counted

    async def node(state: State) -> dict[str, Any]:
        text, usage = await speak(agent, state["task"], inputs_said(agent, state), ask)
        return {"said": {agent["name"]: text}, "usage": {agent["name"]: usage}}

    return node


def pass_node(agent: dict[str, Any]) -> Callable[[State], Awaitable[dict[str, Any]]]:
    """The node a conditional agent's gate goes to when it makes no call: it says the input's message it passes on."""

    async def passed(state: State) -> dict[str, Any]:
        texts = inputs_said(agent, state)
        _, index = gate(agent["when"], texts)
        text = texts[index] if index is not None else None
        return {"said": {agent["name"]: text}, "usage": {agent["name"]: NO_USAGE}}

    return passed


def route(agent: dict[str, Any]) -> Callable[[State], str]:
    """The conditional edge out of a conditional agent's gate: to the agent (it calls its model) or its pass node."""

    def where(state: State) -> str:
        action, _ = gate(agent["when"], inputs_said(agent, state))
        return agent["name"] if action == "call" else agent["name"] + PASS

    return where


async def join(state: State) -> dict[str, Any]:
    return {}


def exit_node(name: str) -> str:
    """The node whose end means the agent has spoken (a conditional agent's join node)."""
    return name + DONE if AGENT[name].get("when", "always") != "always" else name


def build_graph(clients: Mapping[str, Any] | None = None) -> Any:
    """The MAS as a compiled StateGraph; `clients` (backbone name -> AsyncOpenAI client) replaces the default ones."""
    clients = openai_clients() if clients is None else clients
    graph = StateGraph(State)
    for agent in AGENTS:
        name = agent["name"]
        graph.add_node(name, agent_node(agent, clients[agent["backbone"]]))
        entry = name
        if agent.get("when", "always") != "always":
            graph.add_node(name + GATE, join)
            graph.add_node(name + PASS, pass_node(agent))
            graph.add_node(name + DONE, join)
            graph.add_conditional_edges(name + GATE, route(agent), [name, name + PASS])
            graph.add_edge(name, name + DONE)
            graph.add_edge(name + PASS, name + DONE)
            entry = name + GATE
        inputs = [exit_node(source) for source in agent["inputs"]]
        graph.add_edge(START if not inputs else inputs[0] if len(inputs) == 1 else inputs, entry)
    graph.add_edge(exit_node(DECISION), END)
    return graph.compile()


async def main(task: str) -> None:
    state = await build_graph().ainvoke({"task": task, "said": {}, "usage": {}})
    for name, usage in state["usage"].items():
        print(f"[{name}] {usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens")
    answer = state["said"].get(DECISION)
    print(answer if answer is not None else "(the decision agent gave no answer)")


if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or QUERY
    if not question:
        raise SystemExit('usage: python THIS_FILE.py "your question"')
    asyncio.run(main(question))
'''
