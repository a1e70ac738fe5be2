"""The one Task interface: where a benchmark's items come from, how an answer is read from a completion,
and how it is scored. Tasks hold gold answers: nothing the controller imports may import them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from agentbalance.query import Query


@runtime_checkable
class Task(Protocol):
    """A benchmark or a user's file, seen through one interface.

    `domain` is general|math|code (it picks the default role library); `items()` yields queries in
    file order (already cut by the task's limit); `prompt` is the agent-facing text and contains the
    question verbatim; `parse` reads an answer from a completion text (None when there is none);
    `score` says whether an answer is right (None when the gold is unknown); `same_answer` whether two
    parsed answers are one answer as the task reads them (never from the gold); `free_text` whether a query's
    answers are free text, which agree by meaning (agentbalance.agreement) beyond `same_answer`'s exact match.
    """

    name: str
    domain: str

    def items(self) -> Iterator[Query]: ...

    def prompt(self, query: Query) -> str: ...

    def parse(self, text: str, query: Query) -> str | None: ...

    def score(self, query: Query, answer: str | None) -> bool | None: ...

    def same_answer(self, query: Query, first: str, second: str) -> bool: ...

    def free_text(self, query: Query) -> bool: ...
