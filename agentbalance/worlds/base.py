"""The one protocol every world implements: complete one agent's call, return what it cost.

Worlds answer calls; they never decide which agents run or how they are wired (that is the policy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Protocol, runtime_checkable

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import Agent
from agentbalance.query import Message, Query, SameAnswer, Turn, as_query
from agentbalance.roles import Role
from agentbalance.tasks.formats import same_text

same_recorded_answer: SameAnswer = same_text
"""How answers compare when no task says otherwise: the simulated and replay worlds give canonical answers
(option letters, canonical numbers, dates as recorded, "solution:<author>" for code), so equal text after
normalisation (case, spacing, quotes, a final stop) is the same answer; a live world's runs pass the task's
`same_answer` (math equivalence, numbers as numbers)."""

PASS_SCORE = 0.5
"""The quality from which an answer reads as right where a verdict is shown (`correct`): for right/wrong tasks,
whose scores are exactly 1 and 0, the verdict is the grade itself; for a judge's scores it is the replay worlds'
convention (their `correct` column is score >= 0.5). Perf, rewards and every mean are computed from the score;
only what is right/wrong by nature reads this (a failure, in the RL-Focal-style diversity)."""


def verdict(score: float | None) -> bool | None:
    """The right/wrong reading of a quality score (None: ungraded)."""
    return None if score is None else score >= PASS_SCORE


CONVERSATION_HEADER = "The conversation so far (the application's messages before the question):"
TextSink = Callable[[str], None]
"""Where a streamed answer's text goes as it arrives, piece by piece (serve's stream to its client)."""


@dataclass(frozen=True)
class Completion:
    """One agent call's result. Usage is per call: callers sum what they are given, never a global counter.

    `score` is the answer's quality in [0, 1] (right/wrong: 1.0/0.0), set by worlds that know it (simulated,
    replay: the gold, or a recorded grade or judge's score); else None. `correct` is its right/wrong reading.
    `cached`: served from the live world's response cache (nothing was paid; usage, cost and latency
    are the original call's, so traces stay comparable).
    `context_cut`: what the world cut from the inputs to fit the backbone's context window, if anything.
    """

    text: str
    answer: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    reasoning_tokens: int = 0
    score: float | None = None
    cached: bool = False
    context_cut: str | None = None

    @property
    def correct(self) -> bool | None:
        return verdict(self.score)


@dataclass(frozen=True)
class Upstream:
    """A predecessor's finished call, as an agent receives it."""

    agent_id: str
    role: Role
    backbone: Backbone
    completion: Completion


@dataclass(frozen=True)
class AgentCall:
    """Everything a world needs for one agent call: who, on which query, given which inputs.

    `messages` (the chat prompt) is assembled on first use: simulated and replay worlds never need
    the text, and skipping it keeps the runner's per-agent cost low. `note` is the execution's word to
    the agent (a conditional agent that runs is told its inputs disagreed), appended to the question.
    `sample`: which of the backbone's samples this agent reads (the k-th agent of its MAS on this backbone
    reads sample k), so agents sharing a backbone do not all give the same answer; a multi-sample replay
    world reads its recorded sample k (mod the number recorded), a live world sends it as the `seed`.
    `stream`: where the answer's text goes as it arrives: a live world streams the call and passes each piece on
    (a cached answer whole, at once); the simulated and replay worlds, whose answers take no time, pass nothing
    (the caller sends the finished text). None: not streamed.
    """

    agent: Agent
    role: Role
    backbone: Backbone
    query: Query
    inputs: Sequence[Upstream] = field(default_factory=tuple)
    note: str = ""
    sample: int = 0
    stream: TextSink | None = field(default=None, compare=False, repr=False)

    @cached_property
    def messages(self) -> list[dict[str, str]]:
        return agent_messages(self.role, self.query, self.inputs, self.note)


def agent_messages(
    role: Role, query: Query, inputs: Sequence[Upstream], note: str = "", context: Sequence[Turn] | None = None
) -> list[dict[str, str]]:
    """Chat messages of one agent call: its role's system prompt, then one user message with the conversation
    before the question (if any), the query, its predecessors' messages and the execution's note, if any.

    The conversation (`context`, by default the query's) goes into the user message under a header rather than
    as chat turns of its own: the role prompt stays the one system message and the prompt is two messages for
    every backbone, whatever its chat template accepts (some refuse a second system message or two user turns
    in a row). Upstream text is quoted as data under a header; nothing in it changes what the runner does.
    """
    context = query.context if context is None else context
    user = f"Question:\n{query.render()}"
    if context:
        earlier = "\n\n".join(turn.render() for turn in context)
        user = f"{CONVERSATION_HEADER}\n\n{earlier}\n\n{user}"
    if inputs:
        quoted = "\n\n".join(
            f"[{upstream.agent_id} | {upstream.role.name}]\n{upstream.completion.text}" for upstream in inputs
        )
        user += f"\n\nMessages from other agents:\n\n{quoted}"
    if note:
        user += f"\n\n{note}"
    return [{"role": "system", "content": role.prompt}, {"role": "user", "content": user}]


class AgentCallFailed(Exception):
    """A call that did not produce a completion (timeouts, API errors); the runner records it.

    It carries what the failed attempt still cost, so accounting stays exact.
    """

    def __init__(self, message: str, latency_s: float = 0.0, cost_usd: float = 0.0, prompt_tokens: int = 0) -> None:
        super().__init__(message)
        self.latency_s = latency_s
        self.cost_usd = cost_usd
        self.prompt_tokens = prompt_tokens


@runtime_checkable
class World(Protocol):
    """Simulated, replay or live: `await world.complete(call)` answers one agent call."""

    name: str
    simulated: bool
    catalog: Catalog

    async def complete(self, call: AgentCall) -> Completion:
        """Answer one call, or raise AgentCallFailed (recorded) or AgentBalanceError (a user error: stops)."""
        ...


@runtime_checkable
class SyncWorld(World, Protocol):
    """A world whose calls are pure CPU (simulated, replay): `answer` needs no event loop, so training
    rolls MAS out inline."""

    def answer(self, call: AgentCall) -> Completion: ...


@runtime_checkable
class RecordedWorld(Protocol):
    """A world of recorded questions (replay): fixed splits, questions looked up by id, backbone features
    calibrated on its training split, and the role library of its kind of task."""

    default_roles: str

    def queries(self, name: str) -> list[Query]:
        """The questions of split `name` (train | val | test), in the world's fixed (hash) order."""
        ...

    def resolve_query(self, query: Query) -> Query:
        """The recorded question of `query.id` (a query file may give only ids)."""
        ...

    def calibrated_catalog(self) -> Catalog:
        """The catalog with scores measured on the training split (what pools and features use)."""
        ...


class Refusal(Enum):
    """Why a world cannot take a question as the caller gave it."""

    TEXT = "a question text, where a replay world needs the id of a recorded question"
    UNKNOWN_ID = "an id the replay world did not record"
    NO_LOOKUP = "an id to look up, in a world that looks no question up (only a replay world does)"


class QueryRefused(AgentBalanceError):
    """A question a world cannot take as given (`query_for`), with the facts a caller words its own advice from
    (a CLI flag, a request's body field, a Python argument): why, the world's name, the id or the text."""

    def __init__(
        self, why: Refusal, world: str, message: str, *, query_id: str | None = None, text: str | None = None
    ) -> None:
        super().__init__(message)
        self.why = why
        self.world = world
        self.query_id = query_id
        self.text = text


def query_for(
    world: World,
    asked: str | Query | Sequence[Message] | None = None,
    *,
    query_id: str | None = None,
    context: Sequence[Turn] = (),
    hint: str = "name them by their recorded ids, not by question texts",
) -> Query:
    """The world's Query for what a caller has: a question text, a conversation, a Query, or `query_id`, the id of
    a recorded question to look up (`asked` is then not read).

    A replay world (RecordedWorld) answers only its recorded questions, named by id: `query_id` or a Query's id
    gives the recorded question, with the conversation it comes in (`context`, else the Query's); a text is refused,
    with `hint` (how the caller's user names recorded questions), and so is an id it did not record. Every other world
    takes the question as given (a Query as it is, a text as the Query `as_query` makes of it, with `context`) and
    refuses an id to look up: only a replay world looks questions up. Every refusal is a `QueryRefused`."""
    if asked is None and query_id is None:
        raise AgentBalanceError("query_for needs a question (a text, a conversation or a Query) or a recorded id")
    if not isinstance(world, RecordedWorld):
        if query_id is not None or asked is None:
            message = f"{world.name} looks no question up by id ({query_id!r}): only a replay world does"
            raise QueryRefused(Refusal.NO_LOOKUP, world.name, message, query_id=query_id)
        query = as_query(asked)
        return query.model_copy(update={"context": tuple(context)}) if context else query
    if query_id is not None:
        wanted, named = None, query_id
    elif isinstance(asked, Query):
        wanted, named = asked, asked.id
    else:
        text = asked if isinstance(asked, str) else None
        message = f"{world.name} replays its recorded questions only: {hint}"
        raise QueryRefused(Refusal.TEXT, world.name, message, text=text)
    try:
        wanted = wanted or Query(id=named, question=f"(recorded question {named})")
        return world.resolve_query(wanted.model_copy(update={"context": tuple(context)}) if context else wanted)
    except (AgentBalanceError, LookupError, ValueError) as error:  # ValueError: an id no Query can carry ("")
        worded = isinstance(error, AgentBalanceError)  # the world's own words say what and where
        message = str(error) if worded else f"{world.name}: question id {named!r} is not recorded"
        raise QueryRefused(Refusal.UNKNOWN_ID, world.name, message, query_id=named) from None


class WrappedWorld:
    """A world that answers through another (`answering`, a field of the subclass) and adds one thing to it (a judge's
    grade, answers already paid for). It is the answering world by name, kind, catalog, temperature and closing;
    nothing else is passed through, so it never passes for a world it is not (a recorded or a synchronous one)."""

    answering: World

    @property
    def name(self) -> str:
        return self.answering.name

    @property
    def simulated(self) -> bool:
        return self.answering.simulated

    @property
    def catalog(self) -> Catalog:
        return self.answering.catalog

    @property
    def temperature(self) -> float | None:
        """The answering world's sampling temperature (a live world's; None for worlds without one)."""
        return getattr(self.answering, "temperature", None)

    async def aclose(self) -> None:
        close = getattr(self.answering, "aclose", None)
        if close is not None:
            await close()


def pooled_catalog(world: World) -> Catalog:
    """The catalog a world's pools and backbone features come from: calibrated on the recorded training
    split in a replay world, the world's own catalog elsewhere."""
    return world.calibrated_catalog() if isinstance(world, RecordedWorld) else world.catalog


CHARS_PER_TOKEN = 4  # the usual English estimate, used only where no API reports usage
MESSAGE_OVERHEAD_TOKENS = 4  # chat-format tokens per message


def estimate_prompt_tokens(call: AgentCall) -> int:
    """Prompt tokens of a call whose world reports none: the role prompt, the conversation and the query
    (characters / 4) plus the full completions of the inputs, which a real agent reads (not the short texts a
    simulated or replayed upstream shows)."""
    own_text = call.role.prompt + call.query.render() + call.note + "".join(t.render() for t in call.query.context)
    base = -(-len(own_text) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS * 2
    return base + sum(upstream.completion.completion_tokens for upstream in call.inputs)
