"""A query: what a user asks a MAS (question, optional choices, the conversation before it) plus what only
scoring may see (gold).

The controller must only ever read `question` and `choices`; the agents also read `context` (a conversation's
earlier messages); `answer` (gold) and `metadata` are for worlds and scorers.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_jsonl_objects

DOMAINS = ("general", "math", "code")
CONTEXT_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
"""Roles a conversation's earlier messages may have, and how each is kept (OpenAI's `developer` is its newer
name for `system`)."""


class Turn(BaseModel):
    """One earlier message of a conversation: context the agents read before the question, never the question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str

    def render(self) -> str:
        return f"[{self.role}]\n{self.content}"


class Query(BaseModel):
    """One question; `answer` is the gold answer when known.

    `domain` is general/math/code for synthetic and shipped tasks; a replay world keeps its own
    labels (e.g. "biology"). Worlds that need one of DOMAINS infer it when the label is not one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    choices: tuple[str, ...] | None = None
    answer: str | None = None
    domain: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    context: tuple[Turn, ...] = ()  # a conversation's system messages and earlier turns, oldest first

    @field_validator("question")
    @classmethod
    def _question_is_visible(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("a question needs a visible character (it is blank)")
        return question

    @field_validator("choices")
    @classmethod
    def _choices_fit_letters(cls, choices: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if choices is not None and not 2 <= len(choices) <= 26:
            raise ValueError(f"a multiple-choice query needs 2 to 26 choices, got {len(choices)}")
        return choices

    @property
    def letters(self) -> tuple[str, ...]:
        """Option letters A, B, ... of a multiple-choice query (empty otherwise)."""
        return tuple(string.ascii_uppercase[: len(self.choices)]) if self.choices else ()

    def render(self) -> str:
        """The agent-facing text: the question verbatim, then the lettered choices."""
        if not self.choices:
            return self.question
        options = "\n".join(f"({letter}) {choice}" for letter, choice in zip(self.letters, self.choices, strict=True))
        return f"{self.question}\n\n{options}"


Message = Mapping[str, Any]
"""A chat message as the OpenAI API writes it: `{"role": "user", "content": "..."}` (content may be a list of
text parts)."""


def as_query(query: str | Query | Sequence[Message]) -> Query:
    """A Query as it is; a text as a Query whose id is derived from the text (same text, same id); a conversation
    (a list of chat messages) as the Query of its last user message, the messages before it as its context."""
    if isinstance(query, Query):
        return query
    if isinstance(query, Sequence) and not isinstance(query, str):
        question, context = read_conversation(query)
        return text_query(question).model_copy(update={"context": context})
    if not isinstance(query, str) or not query.strip():
        raise AgentBalanceError(f"a query must be a non-empty question text or a Query, got {query!r}")
    return text_query(query)


def text_query(question: str) -> Query:
    """The Query of a question text, its id derived from the text: the same question is the same query (the
    controller builds the same MAS for it), whatever conversation it comes in."""
    return Query(id=f"task-{hashlib.sha256(question.encode()).hexdigest()[:12]}", question=question)


def read_conversation(messages: Sequence[Message], where: str = "messages") -> tuple[str, tuple[Turn, ...]]:
    """The question (the last message, which must be the user's) and the context (every message before it) of a
    conversation; a message the MAS cannot take (a tool call or result, an image, an unknown role) is an error
    that names it (`where`: how the caller's user knows the list)."""
    if not messages:
        raise AgentBalanceError(f"{where}: the conversation is empty; its last message must be the user's question")
    turns = [_turn(message, f"{where}[{number}]") for number, message in enumerate(messages)]
    last = turns[-1]
    if last.role != "user":
        raise AgentBalanceError(
            f"{where}[{len(turns) - 1}]: the last message is the {last.role}'s; it must be the user's question"
        )
    if not last.content.strip():
        raise AgentBalanceError(f"{where}[{len(turns) - 1}]: the user's message is empty; it must hold the question")
    return last.content, tuple(turn for turn in turns[:-1] if turn.content.strip())


def _turn(message: Message, where: str) -> Turn:
    if not isinstance(message, Mapping):
        raise AgentBalanceError(f'{where}: a message must be an object {{"role": ..., "content": ...}}')
    role = message.get("role")
    if role in ("tool", "function") or message.get("tool_calls") or message.get("function_call"):
        raise AgentBalanceError(
            f"{where}: tool calls and tool results are not supported: the MAS's agents call no tools"
        )
    if role not in CONTEXT_ROLES:
        known = ", ".join(CONTEXT_ROLES)
        raise AgentBalanceError(f"{where}: unknown role {role!r}; a message's role is one of {known}")
    return Turn(role=CONTEXT_ROLES[role], content=message_text(message.get("content"), where))  # type: ignore[arg-type]


def message_text(content: object, where: str) -> str:
    """A message's text: a string, or a list of text parts joined by newlines (None: empty)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and all(isinstance(part, Mapping) for part in content):
        kinds = sorted({str(part.get("type")) for part in content} - {"text"})
        if kinds:
            raise AgentBalanceError(f"{where}: only text content is read (got {', '.join(kinds)} parts)")
        texts = [part.get("text") for part in content]
        if not all(isinstance(text, str) for text in texts):
            raise AgentBalanceError(f"{where}: a text part needs a string `text`")
        return "\n".join(texts)  # type: ignore[arg-type]
    raise AgentBalanceError(f"{where}: content must be a string or a list of text parts")


def read_queries(path: str | Path, question_optional: bool = False) -> list[Query]:
    """Read a JSONL query file: one `{"id", "question", "choices"?, "answer"?, "domain"?}` object a line; a line
    may give a conversation instead of `question`, `"messages": [{"role": ..., "content": ...}, ...]` (its last
    message the user's question, the ones before it the context).

    A bad line is an error naming its line number; blank lines are skipped; ids must be unique.
    `question_optional`: a line may give only an id (a replay world then looks the question up).
    """
    return unique_by_id(_numbered_queries(path, question_optional), path, "id", "query")


def _numbered_queries(path: str | Path, question_optional: bool) -> Iterator[tuple[int, Query]]:
    for number, record in read_jsonl_objects(path, "query"):
        if isinstance(record.get("id"), int):
            record["id"] = str(record["id"])
        if question_optional and "question" not in record and isinstance(record.get("id"), str):
            record["question"] = f"(recorded question {record['id']})"
        if isinstance(record.get("answer"), int | float):
            record["answer"] = str(record["answer"])
        if "messages" in record:
            record = _conversation_record(record, f"{path}: line {number}")
        try:
            yield number, Query.model_validate(record)
        except ValidationError as error:
            problem = error.errors()[0]
            field_name = ".".join(str(part) for part in problem["loc"]) or "(line)"
            raise AgentBalanceError(f"{path}: line {number}: field {field_name}: {problem['msg']}") from None


def _conversation_record(record: dict[str, Any], where: str) -> dict[str, Any]:
    """A query line given as a conversation (`"messages": [...]`, as a chat request sends it) in Query fields."""
    if "question" in record or "context" in record:
        raise AgentBalanceError(f"{where}: give the question as `question` or as `messages`, not both")
    messages = record.pop("messages")
    if not isinstance(messages, list):
        raise AgentBalanceError(f"{where}: field messages: a list of chat messages is needed")
    question, context = read_conversation(messages, f"{where}: messages")
    return record | {"question": question, "context": [turn.model_dump() for turn in context]}


def unique_by_id(numbered: Iterable[tuple[int, Query]], path: str | Path, id_name: str, noun: str) -> list[Query]:
    """Queries in file order; a repeated id names both lines, and a file without any is an error."""
    queries: list[Query] = []
    first_line: dict[str, int] = {}
    for number, query in numbered:
        if query.id in first_line:
            raise AgentBalanceError(
                f"{path}: line {number}: duplicate {id_name} {query.id!r} (first on line {first_line[query.id]})"
            )
        first_line[query.id] = number
        queries.append(query)
    if not queries:
        raise AgentBalanceError(f"{path}: no {noun} in the file")
    return queries


SameAnswer = Callable[[Query, str, str], bool]
"""Whether two parsed answers to a query are one answer (never judged from the gold): the tasks' rules
(`Task.same_answer`) and the canonical-answer rule of the simulated and replay worlds have this shape."""
