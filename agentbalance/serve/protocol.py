"""The OpenAI chat-completions protocol as `agentbalance serve` speaks it: what a request may ask (one question,
a budget in the model name or the body) and the chat completion a trace becomes.

It must never run anything or read a key: it turns bodies into questions and traces into JSON.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentbalance.budgets import Budget
from agentbalance.mas import MAS
from agentbalance.runtime.trace import Trace

SERVED_MODEL = "agentbalance"
BUDGET_EXAMPLE = "agentbalance:tok=0.2,lat=10"  # Tok in USD per 100 queries, Lat in seconds per query
SINGLE_TURN = (
    "agentbalance serves single-turn questions: send exactly one message, from the user. The MAS's agents "
    "answer with their own role prompts and see only the question (and each other's replies), so a system "
    "prompt or earlier turns would be silently lost; put what matters into the question"
)


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


class ChatMessage(BaseModel):
    """One message of the request; `content` a text or a list of content parts (only text parts are read)."""

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
    """What a valid request asks: the question, the budget it names (None: the server's), a recorded question's id."""

    question: str
    budget: Budget | None
    query_id: str | None


def read_request(request: ChatRequest, served: str = SERVED_MODEL, budgeted: bool = True) -> Asked:
    """The question and budget of a request, or a ProtocolError saying what to change (`budgeted`: the model
    takes a budget in its name, so an unknown name is told that form)."""
    if request.stream:
        raise ProtocolError(
            400, "stream: streaming is not supported; send stream: false (or leave it out)", param="stream"
        )
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
    return Asked(question_of(request.messages), budget, request.query_id)


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


def question_of(messages: Sequence[ChatMessage]) -> str:
    """The text of the one user message (text content parts joined by newlines)."""
    if len(messages) != 1 or messages[0].role != "user":
        roles = ", ".join(message.role for message in messages)
        raise ProtocolError(400, f"messages: {SINGLE_TURN} (got {len(messages)}: {roles})", param="messages")
    content = messages[0].content
    if isinstance(content, list):
        kinds = sorted({str(part.get("type")) for part in content} - {"text"})
        if kinds:
            raise ProtocolError(
                400, f"messages: only text content is read (got {', '.join(kinds)} parts)", param="messages"
            )
        content = "\n".join(str(part.get("text", "")) for part in content)
    if not content or not content.strip():
        raise ProtocolError(400, "messages: the user message is empty; it must hold the question", param="messages")
    return content


def completion_body(trace: Trace, mas: MAS, served: Budget, model: str, trace_id: str, created: int) -> dict[str, Any]:
    """The chat completion of a MAS run: its answer as the message, usage summed over the agents that ran, and an
    `agentbalance` object with the MAS, cost, modelled latency, skipped, escalated and failed agents."""
    reasoning = sum(agent.reasoning_tokens for agent in trace.agents)
    capped_silent = trace.capped is not None and not trace.text and trace.answer is None
    agents = trace.to_json()["agents"]
    return {
        "id": f"chatcmpl-{trace_id}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": trace.text or (trace.answer or "")},
                "finish_reason": "length" if capped_silent else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": trace.prompt_tokens,
            "completion_tokens": trace.completion_tokens,
            "total_tokens": trace.prompt_tokens + trace.completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
        "agentbalance": {
            "trace_id": trace_id,
            "answer": trace.answer,
            "cost_usd": trace.cost_usd,
            "latency_s": trace.latency_s,  # the modelled critical path
            "wall_s": trace.wall_s,
            "world": trace.world,
            "budget": dataclasses.asdict(served),
            "mas": mas.to_json(),
            "skipped": [{"id": a.id, "reason": a.skipped} for a in trace.agents if a.skipped is not None],
            "escalated": [a.id for a in trace.agents if a.escalated],
            "failed": [{"id": a.id, "error": a.error} for a in trace.agents if a.error is not None],
            "capped": trace.capped,
            "agents": agents,
        },
    }


def unanswered(trace: Trace) -> str | None:
    """Why a run gave no answer because its calls failed (the 502's reason), or None."""
    if trace.text or trace.answer is not None or not trace.failures:
        return None
    errors = "; ".join(f"{agent.id}: {agent.error}" for agent in trace.agents if agent.error is not None)
    return f"upstream: no agent's call gave an answer ({errors})"
