"""A query: what a user asks a MAS (question, optional choices) plus what only scoring may see (gold).

The controller must only ever read `question` and `choices`; `answer` (gold) and `metadata` are for
worlds and scorers.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_jsonl_objects

DOMAINS = ("general", "math", "code")


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


def as_query(query: str | Query) -> Query:
    """A Query as it is; a text as a Query whose id is derived from the text (same text, same id)."""
    if isinstance(query, Query):
        return query
    if not isinstance(query, str) or not query.strip():
        raise AgentBalanceError(f"a query must be a non-empty question text or a Query, got {query!r}")
    return Query(id=f"task-{hashlib.sha256(query.encode()).hexdigest()[:12]}", question=query)


def read_queries(path: str | Path, question_optional: bool = False) -> list[Query]:
    """Read a JSONL query file: one `{"id", "question", "choices"?, "answer"?, "domain"?}` object a line.

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
        try:
            yield number, Query.model_validate(record)
        except ValidationError as error:
            problem = error.errors()[0]
            field_name = ".".join(str(part) for part in problem["loc"]) or "(line)"
            raise AgentBalanceError(f"{path}: line {number}: field {field_name}: {problem['msg']}") from None


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
