"""A replay world's questions.jsonl (shared/data format) read into queries, and the task that asks them anew.

It must never import worlds (worlds import this), and never read a world's outcomes: only its questions.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path

from pydantic import ValidationError

from agentbalance.errors import AgentBalanceError, describe_validation_error
from agentbalance.files import read_jsonl_objects
from agentbalance.query import Query, unique_by_id
from agentbalance.tasks.formats import EXACT, MCQ, NUMBER, PROGRAM, AnswerFormat, multiple_choice
from agentbalance.tasks.list_task import ListTask

QUESTIONS_FILE = "questions.jsonl"
QUESTION_KEYS = frozenset({"id", "domain", "question", "choices", "answer", "source"})


def load_replay_questions(path: str | Path) -> list[Query]:
    """Queries of a replay world: `path` is the world's folder or its questions.jsonl itself."""
    path = Path(path)
    file = path / QUESTIONS_FILE if path.is_dir() else path
    if path.is_dir() and not file.is_file():
        raise AgentBalanceError(f"replay world {path}: missing file {file}")
    return read_replay_questions(file)


def read_replay_questions(path: Path) -> list[Query]:
    """questions.jsonl -> Queries in file order; unknown keys and duplicate ids are errors naming the line."""
    return unique_by_id(_numbered_questions(path), path, "question id", "question")


def _numbered_questions(path: Path) -> Iterator[tuple[int, Query]]:
    for number, raw in read_jsonl_objects(path, "replay questions"):
        where = f"{path}: line {number}"
        unknown = sorted(set(raw) - QUESTION_KEYS)
        if unknown:
            raise AgentBalanceError(
                f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(QUESTION_KEYS))}"
            )
        answer = raw.get("answer")
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = str(answer)
        source = raw.get("source")
        try:
            query = Query(
                id=raw.get("id"),  # type: ignore[arg-type]  # validated by pydantic
                question=raw.get("question"),  # type: ignore[arg-type]
                choices=raw.get("choices"),  # type: ignore[arg-type]
                answer=answer,
                domain=raw.get("domain"),
                metadata={"source": source} if source is not None else {},
            )
        except ValidationError as error:
            raise AgentBalanceError(describe_validation_error(error, where)) from None
        yield number, query


def replay_task(name: str, queries: Sequence[Query]) -> ListTask:
    """Ask a world's questions anew (e.g. to record new backbones); the answer format follows the recorded golds.

    Choices or single-letter golds: option letters (choice-less questions offer A up to the largest gold letter);
    numeric golds: numbers; other golds: exact text; no gold and no choices (code worlds): a program, unscored.
    The queries keep the world's own domain labels; the task's domain is general, math or code accordingly.
    """
    golds = [q.answer.strip() for q in queries if q.answer is not None and q.answer.strip()]
    if any(q.choices for q in queries) or (golds and all(_is_letter(g) for g in golds)):
        top = max((string.ascii_uppercase.index(g.upper()) for g in golds if _is_letter(g)), default=3)
        shared = tuple(string.ascii_uppercase[: max(top + 1, 2)])
        letters = multiple_choice(lambda query: query.letters or shared)
        domain, fallback = "general", letters
    elif golds and all(_is_number(g) for g in golds):
        domain, fallback = "math", NUMBER
    elif golds:
        domain, fallback = "general", EXACT
    else:
        domain, fallback = "code", PROGRAM

    def answer_format(query: Query) -> AnswerFormat:
        return MCQ if query.choices else fallback

    return ListTask(name, domain, tuple(queries), answer_format)


def _is_letter(text: str) -> bool:
    return len(text) == 1 and text.upper() in string.ascii_uppercase


def _is_number(text: str) -> bool:
    try:
        return Decimal(text.replace(",", "").replace("$", "")).is_finite()
    except InvalidOperation:
        return False
