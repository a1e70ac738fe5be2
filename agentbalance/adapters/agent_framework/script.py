"""`agent_framework_script`: a MAS as a standalone, runnable Microsoft Agent Framework workflow script (needs the
framework, not agentbalance).

It writes text only (the workflow's calls; the data, key lookup, prompts and conditional rules are the adapters'
common script parts); it never runs the script and never writes an API key into it.
"""

from __future__ import annotations

from agentbalance.adapters.agent_framework.workflow import RESERVED
from agentbalance.adapters.names import agent_names
from agentbalance.adapters.scripting import agent_entries, backbone_specs, script_data, script_header, spoken_script
from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet


def agent_framework_script(mas: MAS, catalog: Catalog, roles: RoleSet, query: str | None = None) -> str:
    """A runnable Python script that builds this MAS as an Agent Framework workflow over OpenAI-compatible chat
    clients: a start executor, one executor per agent, the MAS's edges (fan-in where an agent has several inputs),
    conditional agents gated as agentbalance gates them. Model ids, base URLs and request arguments (the catalog's
    completion limit included) come from the catalog; API keys from the environment at run time. Its
    `build_workflow(clients)` takes the caller's own chat clients."""
    mas.check_against(catalog, roles)
    names = agent_names(mas, RESERVED)
    agents = agent_entries(mas, roles, names)
    header = script_header(
        "Microsoft Agent Framework workflow",
        mas,
        agents,
        "agent-framework-core and agent-framework-openai",
        "build_workflow(clients) takes your own chat clients (backbone name -> chat client) instead.",
    )
    data = script_data(mas, agents, names, backbone_specs(mas, catalog, limit_in_body=True), query, note=True)
    return spoken_script(header, _IMPORTS, data, _BODY)


_IMPORTS = """
from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_framework import Executor, Message, WorkflowBuilder, WorkflowContext, handler
"""

_BODY = '''

def openai_clients() -> dict[str, Any]:
    """One OpenAI-compatible chat client per backbone of this MAS."""
    from agent_framework.openai import OpenAIChatCompletionClient

    return {
        name: OpenAIChatCompletionClient(
            model=spec["model"],
            base_url=spec["base_url"] or os.environ.get("AGENTBALANCE_BASE_URL"),
            api_key=api_key(name),
        )
        for name, spec in BACKBONES.items()
    }


@dataclass(frozen=True)
class Said:
    """What one agent said (None: nothing, its call failed), the task, and the usage of its call."""

    source: str
    text: str | None
    task: str
    usage: dict[str, int]


class Start(Executor):
    """Hands the task to every agent without inputs."""

    @handler
    async def begin(self, task: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(task)


class AgentNode(Executor):
    """One agent: once all its inputs have spoken (a fan-in), it speaks (see `speak`) and sends what it said on;
    the decision agent's message is the workflow's output."""

    def __init__(self, agent: dict[str, Any], client: Any) -> None:
        super().__init__(id=agent["name"])
        self.agent = agent
        self.client = client

    @handler
    async def on_task(self, task: str, ctx: WorkflowContext[Said, Said]) -> None:
        await self.respond(task, [], ctx)

    @handler
    async def on_input(self, said: Said, ctx: WorkflowContext[Said, Said]) -> None:
        await self.respond(said.task, [said], ctx)

    @handler
    async def on_inputs(self, said: list[Said], ctx: WorkflowContext[Said, Said]) -> None:
        await self.respond(said[0].task, said, ctx)

    async def respond(self, task: str, inputs: Sequence[Said], ctx: WorkflowContext[Said, Said]) -> None:
        by_source = {said.source: said.text for said in inputs}
        texts = [by_source.get(name) for name in self.agent["inputs"]]
        text, usage = await speak(self.agent, task, texts, self.ask)
        said = Said(self.agent["name"], text, task, usage)
        if self.agent["name"] == DECISION:
            await ctx.yield_output(said)
        else:
            await ctx.send_message(said)

    async def ask(self, agent: dict[str, Any], user: str) -> tuple[str, dict[str, int]]:
        """One call of the agent's chat client: its system prompt, its user message, its backbone's arguments."""
        messages = [Message(role="system", contents=[agent["system_message"]]), Message(role="user", contents=[user])]
        response = await self.client.get_response(messages, options=BACKBONES[agent["backbone"]]["arguments"])
        usage = response.usage_details or {}
        counted = {"prompt_tokens": usage.get("input_token_count") or 0}
        return response.text, {**counted, "completion_tokens": usage.get("output_token_count") or 0}


def build_workflow(clients: Mapping[str, Any] | None = None) -> Any:
    """The MAS as a workflow; `clients` (backbone name -> chat client) replaces the OpenAI clients."""
    clients = openai_clients() if clients is None else clients
    nodes = {agent["name"]: AgentNode(agent, clients[agent["backbone"]]) for agent in AGENTS}
    start = Start(id="task")
    builder = WorkflowBuilder(start_executor=start, output_from=[nodes[DECISION]])
    sources = [nodes[agent["name"]] for agent in AGENTS if not agent["inputs"]]
    if len(sources) == 1:
        builder.add_edge(start, sources[0])
    else:
        builder.add_fan_out_edges(start, sources)
    for agent in AGENTS:
        inputs = [nodes[name] for name in agent["inputs"]]
        if len(inputs) == 1:
            builder.add_edge(inputs[0], nodes[agent["name"]])
        elif inputs:
            builder.add_fan_in_edges(inputs, nodes[agent["name"]])
    return builder.build()


async def main(task: str) -> None:
    result = await build_workflow().run(task)
    (final,) = result.get_outputs()
    print(final.text if final.text is not None else "(the decision agent gave no answer)")


if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or QUERY
    if not question:
        raise SystemExit('usage: python THIS_FILE.py "your question"')
    asyncio.run(main(question))
'''
