"""What every exported script shares: its data (agents, edges, backbones and their request arguments, laid out as
Python literals), the API-key lookup, and the conditional agents' rules as a standalone script can apply them.

It writes text only: it never runs a script and never writes an API key into one. Each framework's script module
adds only that framework's calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from agentbalance.catalog import Backbone, Catalog
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import DISAGREEMENT_NOTE

LIMIT_PARAMETERS = ("max_tokens", "max_completion_tokens")


def agent_entries(mas: MAS, roles: RoleSet, names: dict[str, str]) -> list[dict[str, Any]]:
    """The script's AGENTS, in topological order: name, id, role, backbone, `when` (only when the MAS has a
    conditional agent), the names of its inputs, its role's description and system message."""
    return [
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


def backbone_specs(mas: MAS, catalog: Catalog, limit_in_body: bool = False) -> dict[str, dict[str, Any]]:
    """BACKBONES of the script: each used backbone's model id, endpoint, key variable NAME and request arguments
    (the OpenAI SDK's own as such, others in extra_body). `limit_in_body` sends the completion limit in extra_body
    under the catalog's field name, for clients that would rename the SDK's (Agent Framework's max_tokens)."""
    used = dict.fromkeys(agent.backbone for agent in mas.agents)
    return {name: backbone_spec(catalog[name], limit_in_body) for name in used}


def backbone_spec(backbone: Backbone, limit_in_body: bool = False) -> dict[str, Any]:
    """Model id, endpoint, key variable NAME, and client arguments (SDK keys as such, others in extra_body)."""
    request = backbone.call_parameters(temperature=0.0)  # as the live world's calls: none is unbounded
    sdk = openai_create_arguments() - (set(LIMIT_PARAMETERS) if limit_in_body else set())
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


def openai_create_arguments() -> frozenset[str]:
    """Keyword arguments of the OpenAI SDK's chat.completions.create (the clients take them as is)."""
    from openai.resources.chat.completions import AsyncCompletions

    reserved = {"self", "messages", "model", "stream", "n", "extra_headers", "extra_query", "extra_body", "timeout"}
    return frozenset(inspect.signature(AsyncCompletions.create).parameters) - reserved


def literal(value: object, indent: int = 0) -> str:
    """Plain data (str, number, bool, None, list, dict) as a Python literal laid out like hand-written code."""
    inline = repr(value)
    if not isinstance(value, dict | list) or not value or (len(inline) <= 80 and "{" not in inline[1:]):
        return inline
    pad = " " * (indent + 4)
    if isinstance(value, dict):
        items = [f"{pad}{key!r}: {literal(item, indent + 4)}," for key, item in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + "\n".join(f"{pad}{literal(item, indent + 4)}," for item in value) + "\n" + " " * indent + "]"


def script_header(title: str, mas: MAS, agents: list[dict[str, Any]], needs: str, own_clients: str) -> str:
    """The docstring's text (without its closing quotes): what the script builds, how to run it, where the
    endpoints and keys come from, how to pass your own clients, and the conditional agents' rules if any."""
    summary = ", ".join(f"{a['name']} ({a['role']} on {a['backbone']})" for a in agents)
    header = (
        f'"""{title} of an agentbalance MAS (query {mas.query_id or "-"}, pool {mas.pool}): '
        f"{len(agents)} agent(s), {len(mas.edges)} edge(s).\n\n"
        f"Agents: {summary}.\n"
        f'Run: python THIS_FILE.py "your question"   (needs {needs})\n'
        "Endpoint per backbone: its base_url below, else $AGENTBALANCE_BASE_URL, else OpenAI's. API key: the\n"
        "variable named in its api_key_env, else $AGENTBALANCE_API_KEY, else $OPENAI_API_KEY; never in this file.\n"
        f"{own_clients}\n"
    )
    if mas.conditional:
        listed = ", ".join(f"{a['name']} ({a['when']!r})" for a in agents if a["when"] != "always")
        header += f"\nConditional agents: {listed}." + CONDITIONAL_HEADER
    return header


def script_data(mas: MAS, agents: list[dict[str, Any]], names: dict[str, str], backbones: object, query: str | None,
                extra: tuple[str, ...] = (), note: bool = False) -> list[str]:  # fmt: skip
    """The script's data assignments: AGENTS, EDGES, DECISION, BACKBONES, `extra` ones, QUERY, and agentbalance's
    own disagreement note when a conditional agent needs it (or `note`: always)."""
    data = [
        "# In topological order; an agent sees the task and the last message of each of its inputs, nothing else.",
        f"AGENTS = {literal(agents)}",
        f"EDGES = {literal([[names[s], names[t]] for s, t in mas.edges])}",
        f"DECISION = {names[mas.decision]!r}",
        f"BACKBONES = {literal(backbones)}",
        *extra,
        f"QUERY = {query!r}",
    ]
    if mas.conditional or note:
        data.append(f"DISAGREEMENT_NOTE = {DISAGREEMENT_NOTE!r}")  # agentbalance's own words
    return data


def spoken_script(header: str, imports: str, data: Sequence[str], body: str) -> str:
    """A script whose agents speak by the shared rules: its header, imports and data, the conditional and speaking
    rules (`CONDITIONAL_RULES`, `SPEAK_RULES`), the API key lookup, then the framework's own `body`."""
    parts = [header + '"""\n', imports, "\n" + "\n\n".join(data) + "\n"]
    return "".join([*parts, CONDITIONAL_RULES, SPEAK_RULES, API_KEY_FUNCTION, body])


API_KEY_FUNCTION = '''

def api_key(backbone: str) -> str:
    """The backbone's key from the environment: its own variable if it names one, else the common ones."""
    own = BACKBONES[backbone]["api_key_env"]
    names = [own] if own else ["AGENTBALANCE_API_KEY", "OPENAI_API_KEY"]
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    raise SystemExit(f"no API key for backbone {backbone!r}: set ${' or $'.join(names)}")
'''

CONDITIONAL_HEADER = r"""
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

# the rules of conditional agents in a script: read an answer, compare two, the majority of the inputs, decide
CONDITIONAL_RULES = r'''

ANSWER_LINE = re.compile(r"^[\s*#>_-]*(?:final\s+)?answer\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
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


def majority(answers: Sequence[str | None]) -> int | None:
    """The index of the first input that gave the answer most inputs gave (ties: the earlier input), None if
    none gave one. Unweighted: this script has no catalog reliabilities; agentbalance weighs each vote by its
    backbone's."""
    keys = [normalised(answer) if answer else None for answer in answers]
    given = [key for key in keys if key is not None]
    if not given:
        return None
    winner = max(given, key=lambda key: (given.count(key), -keys.index(key)))
    return keys.index(winner)


def gate(when: str, texts: Sequence[str | None]) -> tuple[str, int | None]:
    """What a conditional agent does given its inputs' messages (None: none arrived): ("call", None) to ask it
    afresh, else ("pass", i) to say input i's message without a call (i None: no input gave an answer)."""
    answers = [read_answer(text) if text is not None else None for text in texts]
    if when == "never":
        return "pass", majority(answers)
    if None not in answers and len({normalised(answer) for answer in answers}) == 1:
        return "pass", 0  # they agree: no call
    return "call", None


def disagreement_note(texts: Sequence[str | None]) -> str:
    """agentbalance's note to an escalated agent, listing its inputs' answers."""
    answers = [read_answer(text) if text is not None else None for text in texts]
    return DISAGREEMENT_NOTE.format(answers="; ".join(answer or "none" for answer in answers))


def fallback(texts: Sequence[str | None]) -> int | None:
    """The input whose message a conditional agent whose call failed passes on: its inputs' majority."""
    return majority([read_answer(text) if text is not None else None for text in texts])
'''

# how an agent of a script speaks (Agent Framework's and LangGraph's scripts): its prompt, as agentbalance's
# runtime words it, and its turn: a conditional agent's gate, one call through `ask`, a failure carried on
SPEAK_RULES = r'''

AGENT = {agent["name"]: agent for agent in AGENTS}
NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0}
Ask = Callable[[dict[str, Any], str], Awaitable[tuple[str, dict[str, int]]]]


def user_message(task: str, texts: Sequence[str | None], names: Sequence[str], note: str = "") -> str:
    """An agent's user message as agentbalance words it: the question, then its inputs' messages (those that
    arrived) quoted under a header, then agentbalance's note (an escalated conditional agent's)."""
    user = f"Question:\n{task}"
    quoted = [
        f"[{AGENT[name]['id']} | {AGENT[name]['role']}]\n{text}"
        for name, text in zip(names, texts, strict=True)
        if text is not None
    ]
    if quoted:
        user += "\n\nMessages from other agents:\n\n" + "\n\n".join(quoted)
    if note:
        user += f"\n\n{note}"
    return user


async def speak(agent: dict[str, Any], task: str, texts: Sequence[str | None], ask: Ask) -> tuple[str | None, dict]:
    """What one agent says given its inputs' messages (None: an input that failed), and the usage of its call:
    a conditional agent passes an input's message on without a call, or is asked afresh; a failed call is logged,
    and its successors go on without it (a conditional agent's pass on its inputs' majority message)."""
    when = agent.get("when", "always")
    if when != "always":
        action, passed = gate(when, texts)
        if action == "pass":
            return (texts[passed] if passed is not None else None), NO_USAGE
        user = user_message(task, [], [], disagreement_note(texts))
    else:
        user = user_message(task, texts, agent["inputs"])
    try:
        return await ask(agent, user)
    except Exception as error:  # as agentbalance: recorded, and the graph carries on
        LOG.warning("%s: call failed (%s)", agent["name"], error)
        if when == "always":
            return None, NO_USAGE
        passed = fallback(texts)
        return (texts[passed] if passed is not None else None), NO_USAGE
'''
