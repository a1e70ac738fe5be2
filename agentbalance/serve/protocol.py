"""The OpenAI chat-completions protocol as `agentbalance serve` speaks it: what a request may ask (a question in a
conversation, a budget in the model name or the body) and the chat completion a trace becomes.

It must never run anything or read a key: it turns bodies into questions and traces into JSON.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Turn, read_conversation
from agentbalance.runtime.trace import Trace

SERVED_MODEL = "agentbalance"
BUDGET_EXAMPLE = "agentbalance:tok=0.2,lat=10"  # Tok in USD per 100 queries, Lat in seconds per query
STREAM_PIECE_CHARS = 24  # a streamed answer's content chunks: a few words each


class ProtocolError(Exception):
    """A request the server refuses: an HTTP status and an OpenAI-style error (type, message, param, code)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.kind, self.param, self.code)


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """The error object OpenAI's API answers with (its clients read `error.message`)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class BudgetField(BaseModel):
    """The body's `budget` field: `{"tok": 0.2, "lat": 10}` (either may be left out)."""

    model_config = ConfigDict(extra="forbid")

    tok: float | None = None
    lat: float | None = None


class StreamOptions(BaseModel):
    """`stream_options`: `include_usage` adds a last chunk with the usage (and the `agentbalance` object)."""

    model_config = ConfigDict(extra="allow")

    include_usage: bool | None = None


class ChatMessage(BaseModel):
    """One message of the request; `content` a text or a list of content parts (only text parts are read). Its
    other fields (`name`, `tool_calls`, ...) are kept for `read_conversation` to judge."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The body of POST /v1/chat/completions. Unknown fields are accepted and ignored, as OpenAI-compatible servers
    do (sampling parameters such as temperature or max_tokens do not apply: each agent calls its backbone with the
    world's settings); the fields that would change what the response is are checked in `read_request`."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    n: int | None = None
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    logprobs: bool | None = None
    budget: BudgetField | None = None  # agentbalance's extra field (the OpenAI SDK sends it with extra_body)
    query_id: str | None = None  # a replay world's recorded question (agentbalance's extra field)


@dataclass(frozen=True)
class Asked:
    """What a valid request asks: the question (its last user message) and the conversation before it, the budget
    it names (None: the server's), a recorded question's id."""

    question: str
    context: tuple[Turn, ...]
    budget: Budget | None
    query_id: str | None
    stream: bool = False
    include_usage: bool = False


def read_request(request: ChatRequest, served: str = SERVED_MODEL, budgeted: bool = True) -> Asked:
    """The question and budget of a request, or a ProtocolError saying what to change (`budgeted`: the model
    takes a budget in its name, so an unknown name is told that form)."""
    if request.n not in (None, 1):
        raise ProtocolError(400, f"n: one MAS answer per request (n must be 1, got {request.n})", param="n")
    if request.tools or request.functions:
        raise ProtocolError(400, "tools: the MAS's agents call no tools; send the request without tools", param="tools")
    if request.tool_choice not in (None, "none", "auto"):
        raise ProtocolError(400, "tool_choice: the MAS's agents call no tools", param="tool_choice")
    if request.response_format is not None and request.response_format.get("type", "text") != "text":
        raise ProtocolError(
            400, "response_format: only text answers (the MAS's agents reply in text)", param="response_format"
        )
    if request.logprobs:
        raise ProtocolError(400, "logprobs: a MAS answer has no token log-probabilities", param="logprobs")
    named = budget_of_model(request.model, served, budgeted)
    given = request.budget
    if given is not None and named is not None:
        raise ProtocolError(
            400, "budget: give the budget one way, in the model name or in the body's budget field", param="budget"
        )
    budget = named if given is None else checked_budget(given.tok, given.lat, "budget")
    question, context = conversation_of(request.messages)
    include_usage = bool(request.stream and request.stream_options and request.stream_options.include_usage)
    return Asked(question, context, budget, request.query_id, bool(request.stream), include_usage)


def budget_of_model(name: str, served: str = SERVED_MODEL, budgeted: bool = True) -> Budget | None:
    """The budget a model name asks for: `agentbalance` (None: the server's), `agentbalance:tok=0.2,lat=10`."""
    if name == served:
        return None
    prefix = f"{served}:"
    if not name.startswith(prefix):
        with_budget = f" (with a budget: {prefix}tok=0.2,lat=10)" if budgeted else ""
        raise ProtocolError(
            404,
            f"model: the model {name!r} does not exist; this server serves {served!r}{with_budget}",
            param="model",
            code="model_not_found",
        )
    values: dict[str, str] = {}
    for item in name.removeprefix(prefix).split(","):
        key, equals, value = (part.strip() for part in item.partition("="))
        if not equals or key not in ("tok", "lat") or key in values:
            problem = f"{key!r} is given twice" if key in values else f"cannot read {item!r}"
            raise ProtocolError(
                400,
                f"model: {problem} in {name!r}; write the budget as {prefix}tok=0.2,lat=10 (tok: USD per 100 "
                "queries, lat: seconds per query; either may be left out)",
                param="model",
            )
        values[key] = value
    numbers = {}
    for key, value in values.items():
        try:
            numbers[key] = float(value)
        except ValueError:
            raise ProtocolError(400, f"model: {key}={value!r} is not a number", param="model") from None
    return checked_budget(numbers.get("tok"), numbers.get("lat"), "model")


def checked_budget(tok: float | None, lat: float | None, param: str) -> Budget | None:
    """A Budget of positive, finite numbers (None when neither axis is given)."""
    for name, value in (("tok", tok), ("lat", lat)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ProtocolError(400, f"{param}: {name} must be a positive number, got {value}", param=param)
    return Budget(tok, lat) if tok is not None or lat is not None else None


def conversation_of(messages: Sequence[ChatMessage]) -> tuple[str, tuple[Turn, ...]]:
    """The question (the last message, the user's) and the messages before it, which every agent reads as context;
    a message the MAS cannot take (a tool call or result, an image) is a 400 that names it."""
    try:
        return read_conversation([message.model_dump() for message in messages])
    except AgentBalanceError as error:
        raise ProtocolError(400, str(error), param="messages") from None


def completion_body(
    trace: Trace, mas: MAS, served: Budget, model: str, trace_id: str, created: int, extra: Mapping[str, Any] = {}
) -> dict[str, Any]:
    """The chat completion of a MAS run: its answer as the message, usage summed over the agents that ran, and an
    `agentbalance` object with the MAS, cost, modelled latency, skipped, escalated and failed agents (and `extra`,
    the server's own state)."""
    return {
        "id": f"chatcmpl-{trace_id}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer_text(trace)},
                "finish_reason": finish_reason(trace),
                "logprobs": None,
            }
        ],
        "usage": usage_of(trace),
        "agentbalance": details_of(trace, mas, served, trace_id) | dict(extra),
    }


def answer_text(trace: Trace) -> str:
    """What the decision agent passed on (its reply, or the agreed input's), else the parsed answer."""
    return trace.text or (trace.answer or "")


def finish_reason(trace: Trace) -> str:
    """`length` when a per-query cap stopped the MAS before any answer, else `stop`."""
    capped_silent = trace.capped is not None and not trace.text and trace.answer is None
    return "length" if capped_silent else "stop"


def usage_of(trace: Trace) -> dict[str, Any]:
    """OpenAI's usage object, summed over the agents that made a call (a failed call's prompt tokens included)."""
    reasoning = sum(agent.reasoning_tokens for agent in trace.agents)
    return {
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "total_tokens": trace.prompt_tokens + trace.completion_tokens,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def details_of(trace: Trace, mas: MAS, served: Budget, trace_id: str) -> dict[str, Any]:
    """The `agentbalance` object: what the MAS was, what it cost and did, and its grade where the world knows it."""
    return {
        "trace_id": trace_id,
        "answer": trace.answer,
        "correct": trace.correct,  # a replay world's recorded grade, or a task's gold: None when unknown
        "score": trace.score,  # the quality in [0, 1] that `correct` reads (right/wrong: 1.0/0.0)
        "cost_usd": trace.cost_usd,
        "latency_s": trace.latency_s,  # the modelled critical path
        "wall_s": trace.wall_s,
        "world": trace.world,
        "budget": dataclasses.asdict(served),
        "mas": mas.to_json(),
        "skipped": [{"id": a.id, "reason": a.skipped} for a in trace.agents if a.skipped is not None],
        "escalated": [a.id for a in trace.agents if a.escalated],
        "failed": [{"id": a.id, "error": a.error} for a in trace.agents if a.error is not None],
        "context_cut": [{"id": a.id, "cut": a.context_cut} for a in trace.agents if a.context_cut is not None],
        "capped": trace.capped,
        "agents": trace.to_json()["agents"],
    }


def chunk_body(
    trace_id: str, model: str, created: int, delta: Mapping[str, Any], finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One `chat.completion.chunk` of a stream, with one choice (`delta`: what it adds to the message)."""
    choice = {"index": 0, "delta": dict(delta), "finish_reason": finish, "logprobs": None}
    body = {"id": f"chatcmpl-{trace_id}", "object": "chat.completion.chunk", "created": created, "model": model}
    return body | {"choices": [choice]} | extra


def answer_pieces(text: str, size: int = STREAM_PIECE_CHARS) -> list[str]:
    """The answer cut into pieces of about `size` characters at word ends (joined, they are the text exactly)."""
    pieces: list[str] = []
    for word in re.findall(r"\s*\S+\s*|\s+", text):
        if pieces and len(pieces[-1]) + len(word) <= size:
            pieces[-1] += word
        else:
            pieces.append(word)
    return pieces


def unanswered(trace: Trace) -> str | None:
    """Why a run gave no answer because its calls failed (the 502's reason), or None."""
    if trace.text or trace.answer is not None or not trace.failures:
        return None
    errors = "; ".join(f"{agent.id}: {agent.error}" for agent in trace.agents if agent.error is not None)
    return f"upstream: no agent's call gave an answer ({errors})"
