"""`autogen_script`: a MAS as a standalone, runnable AutoGen GraphFlow script (needs AutoGen, not agentbalance).

It writes text only; it never runs the script and never writes an API key into it.
"""

from __future__ import annotations

import inspect
from typing import Any

from autogen_core.models import ModelFamily

from agentbalance.adapters.autogen.names import autogen_names
from agentbalance.adapters.autogen.world_client import WORLD_MODEL_INFO
from agentbalance.catalog import Backbone, Catalog
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet


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
