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
from agentbalance.runtime.execution import DISAGREEMENT_NOTE


def autogen_script(mas: MAS, catalog: Catalog, roles: RoleSet, query: str | None = None) -> str:
    """A runnable Python script that builds this MAS as an AutoGen GraphFlow over OpenAI-compatible clients.

    It needs AutoGen only (not agentbalance). Model ids and base URLs come from the catalog; API keys
    from the environment at run time (the backbone's `api_key_env`, else $AGENTBALANCE_API_KEY, else
    $OPENAI_API_KEY), never from this file. `build_flow(clients)` takes the caller's own clients.
    Conditional agents (`when`) get a small wrapper in the script; a MAS without them gets no trace of it.
    """
    mas.check_against(catalog, roles)
    names = autogen_names(mas)
    agents = [
        {
            "name": names[agent_id],
            "id": agent_id,
            "role": mas.agent(agent_id).role,
            "backbone": mas.agent(agent_id).backbone,
            **({"when": mas.agent(agent_id).when} if mas.conditional else {}),
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
    )
    data = [
        "# In topological order; an agent sees the task and the last message of each of its inputs, nothing else.",
        f"AGENTS = {_literal(agents)}",
        f"EDGES = {_literal([[names[s], names[t]] for s, t in mas.edges])}",
        f"DECISION = {names[mas.decision]!r}",
        f"BACKBONES = {_literal(backbones)}",
        f"MODEL_INFO = {_literal(dict(WORLD_MODEL_INFO, family=str(ModelFamily.UNKNOWN)))}",
        f"QUERY = {query!r}",
    ]
    conditional = mas.conditional  # without conditional agents: exactly the script of before `when` existed
    if conditional:
        listed = ", ".join(f"{a['name']} ({a['when']!r})" for a in agents if a["when"] != "always")
        header += f"\nConditional agents: {listed}." + _CONDITIONAL_HEADER
        data.append(f"DISAGREEMENT_NOTE = {DISAGREEMENT_NOTE!r}")  # agentbalance's own words
    return "".join(
        [
            header + '"""\n',
            _SCRIPT_IMPORTS + (_CONDITIONAL_IMPORTS if conditional else ""),
            "\n" + "\n\n".join(data) + "\n",
            _CONDITIONAL_AGENT if conditional else "",
            _SCRIPT_BODY_HEAD + (_CONDITIONAL_WRAP if conditional else "") + _SCRIPT_BODY_TAIL,
        ]
    )


def _backbone_spec(backbone: Backbone) -> dict[str, Any]:
    """Model id, endpoint, key variable NAME, and client arguments (SDK keys as such, others in extra_body)."""
    request = backbone.call_parameters(temperature=0.0)  # as the live world's calls: none is unbounded
    sdk = _openai_create_arguments()
    arguments = {k: v for k, v in request.items() if k in sdk}
    extra = {k: v for k, v in request.items() if k not in sdk}
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

_SCRIPT_BODY_HEAD = '''

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

_CONDITIONAL_HEADER = r"""
They run as agentbalance runs them (its runtime/execution.py), as closely as a standalone script can:
* "disagree": if all its inputs gave an answer and the answers agree, it makes no call and says its first input's
  message (zero usage); else it is asked afresh: its system prompt, the task and a note listing its inputs'
  answers (not their messages).
* "never": it never calls its model and says the message of its inputs' majority answer (ties: the earlier
  input); so does a conditional agent whose call fails.
Approximations: a message's answer is its last \\boxed{...}, else its last "Answer: X" line, else none, and
answers are compared as normalised text (case, spacing, surrounding quotes and a final full stop aside), not by
the task's rule (no MATH equivalence); the vote is unweighted, while agentbalance weighs each input by its
backbone's catalog reliability, which this script does not have.
"""

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

ANSWER_LINE = re.compile(r"^[\s*#>_-]*(?:final\s+)?answer\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
LOG = logging.getLogger(__name__)


def read_answer(text: str) -> str | None:
    """A message's answer: its last complete \\boxed{...}, else its last `Answer: X` line, else None."""
    boxed = ""
    for opening in re.finditer(r"\\boxed\s*\{", text):
        depth = 1
        for end in range(opening.end(), len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                boxed = text[opening.end() : end].strip()
                break
    if boxed:
        return boxed
    lines = [line.strip("*_ ") for line in ANSWER_LINE.findall(text)]
    return lines[-1] if lines and lines[-1] else None


def normalised(answer: str) -> str:
    """How answers are compared: case, runs of spaces, surrounding quotes and a final full stop aside."""
    return " ".join(answer.split()).strip("\"'`").rstrip(".").casefold()


def majority(inputs: Sequence[BaseChatMessage | None], answers: Sequence[str | None]) -> BaseChatMessage | None:
    """The message of the answer most inputs gave (ties: the earlier input), None if none gave one.

    Unweighted: this script has no catalog reliabilities; agentbalance weighs each vote by its backbone's."""
    keys = [normalised(answer) if answer else None for answer in answers]
    given = [key for key in keys if key is not None]
    if not given:
        return None
    winner = max(given, key=lambda key: (given.count(key), -keys.index(key)))
    return inputs[keys.index(winner)]


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
        answers = [read_answer(message.to_text()) if message is not None else None for message in inputs]
        if self.when == "never":
            return self.say(majority(inputs, answers))
        if None not in answers and len({normalised(answer) for answer in answers}) == 1:
            return self.say(inputs[0])  # they agree: no call
        listed = "; ".join(answer or "none" for answer in answers)
        note = TextMessage(content=DISAGREEMENT_NOTE.format(answers=listed), source="user")
        try:  # asked afresh: its system prompt, the task and the note, not its inputs' messages
            return await self.inner.on_messages([*task, note], cancellation_token)
        except Exception as error:  # as agentbalance: a failed call passes on its inputs' majority message
            LOG.warning("%s: call failed (%s); it passes on its inputs' majority message", self.name, error)
            return self.say(majority(inputs, answers))

    def say(self, message: BaseChatMessage | None) -> Response:
        """An input's message passed on as this agent's own, at zero usage (no model call)."""
        text = message.to_text() if message is not None else f"[{self.name}: no input gave an answer]"
        return Response(chat_message=TextMessage(content=text, source=self.name, models_usage=NO_USAGE))
'''

_CONDITIONAL_WRAP = """        if agent["when"] != "always":  # its inputs decide whether it calls its model
            inner = ConditionalAgent(inner, agent["when"], agent["inputs"])
"""
