"""`autogen_script`: a MAS as a standalone, runnable AutoGen GraphFlow script (needs AutoGen, not agentbalance).

It writes text only (AutoGen's calls; the data, key lookup and conditional rules are the adapters' common
script parts); it never runs the script and never writes an API key into it.
"""

from __future__ import annotations

from autogen_core.models import ModelFamily

from agentbalance.adapters.autogen.names import autogen_names
from agentbalance.adapters.autogen.world_client import WORLD_MODEL_INFO
from agentbalance.adapters.scripting import (
    API_KEY_FUNCTION,
    CONDITIONAL_RULES,
    agent_entries,
    backbone_specs,
    literal,
    script_data,
    script_header,
)
from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet


def autogen_script(mas: MAS, catalog: Catalog, roles: RoleSet, query: str | None = None) -> str:
    """A runnable Python script that builds this MAS as an AutoGen GraphFlow over OpenAI-compatible clients.

    It needs AutoGen only (not agentbalance). Model ids and base URLs come from the catalog; API keys
    from the environment at run time (the backbone's `api_key_env`, else $AGENTBALANCE_API_KEY, else
    $OPENAI_API_KEY), never from this file. `build_flow(clients)` takes the caller's own clients.
    Conditional agents (`when`) get a small wrapper in the script; a MAS without them gets no trace of it.
    """
    mas.check_against(catalog, roles)
    names = autogen_names(mas)
    agents = agent_entries(mas, roles, names)
    header = script_header(
        "AutoGen GraphFlow",
        mas,
        agents,
        "autogen-agentchat and autogen-ext[openai] 0.7",
        "build_flow(clients) takes your own model clients (backbone name -> ChatCompletionClient) instead.",
    )
    model_info = f"MODEL_INFO = {literal(dict(WORLD_MODEL_INFO, family=str(ModelFamily.UNKNOWN)))}"
    data = script_data(mas, agents, names, backbone_specs(mas, catalog), query, (model_info,))
    conditional = mas.conditional  # without conditional agents: exactly the script of before `when` existed
    return "".join(
        [
            header + '"""\n',
            _SCRIPT_IMPORTS + (_CONDITIONAL_IMPORTS if conditional else ""),
            "\n" + "\n\n".join(data) + "\n",
            (CONDITIONAL_RULES + _CONDITIONAL_AGENT) if conditional else "",
            API_KEY_FUNCTION + _SCRIPT_BODY_HEAD + (_CONDITIONAL_WRAP if conditional else "") + _SCRIPT_BODY_TAIL,
        ]
    )


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

_SCRIPT_BODY_HEAD = '''

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
'''

_SCRIPT_BODY_TAIL = """        visible = [PerSourceFilter(source="user", position="first", count=1)]
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
"""

# ---- conditional agents (`when`): in the script only when the MAS has one

_CONDITIONAL_IMPORTS = """
# for the conditional agents
import logging
import re
from collections.abc import Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import RequestUsage
"""

_CONDITIONAL_AGENT = r'''

NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


class ConditionalAgent(BaseChatAgent):
    """An agent whose inputs decide whether it calls its model (agentbalance's `when`, see this file's header):
    "disagree" calls it only when they disagree, asked afresh; "never" passes on their majority message."""

    def __init__(self, inner: AssistantAgent, when: str, inputs: Sequence[str]) -> None:
        super().__init__(inner.name, inner.description)
        self.inner = inner
        self.when = when
        self.inputs = list(inputs)

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return self.inner.produced_message_types

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        await self.inner.on_reset(cancellation_token)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        """`messages`: the task and the last message of each input (the MessageFilterAgent around this one)."""
        task = [message for message in messages if message.source == "user"][:1]
        last = {message.source: message for message in messages}
        inputs = [last.get(name) for name in self.inputs]
        texts = [message.to_text() if message is not None else None for message in inputs]
        action, passed = gate(self.when, texts)
        if action == "pass":
            return self.say(inputs[passed] if passed is not None else None)
        note = TextMessage(content=disagreement_note(texts), source="user")
        try:  # asked afresh: its system prompt, the task and the note, not its inputs' messages
            return await self.inner.on_messages([*task, note], cancellation_token)
        except Exception as error:  # as agentbalance: a failed call passes on its inputs' majority message
            LOG.warning("%s: call failed (%s); it passes on its inputs' majority message", self.name, error)
            passed = fallback(texts)
            return self.say(inputs[passed] if passed is not None else None)

    def say(self, message: BaseChatMessage | None) -> Response:
        """An input's message passed on as this agent's own, at zero usage (no model call)."""
        text = message.to_text() if message is not None else f"[{self.name}: no input gave an answer]"
        return Response(chat_message=TextMessage(content=text, source=self.name, models_usage=NO_USAGE))
'''

_CONDITIONAL_WRAP = """        if agent["when"] != "always":  # its inputs decide whether it calls its model
            inner = ConditionalAgent(inner, agent["when"], agent["inputs"])
"""
