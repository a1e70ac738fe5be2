"""ListTask: the one Task implementation every loader returns, a list of queries plus their answer format.

It must never read files or hold per-dataset logic: loaders build the queries, formats read and check answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS, Query
from agentbalance.tasks.formats import AnswerFormat


@dataclass(frozen=True)
class ListTask:
    """Queries in file order, with one answer format for all (or a function choosing one per query)."""

    name: str
    domain: str
    queries: tuple[Query, ...]
    answer_format: AnswerFormat | Callable[[Query], AnswerFormat]

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"task {self.name}: domain must be one of {DOMAINS}, got {self.domain!r}")
        seen: set[str] = set()
        for query in self.queries:
            if query.id in seen:
                raise AgentBalanceError(f"task {self.name!r}: two queries have the id {query.id!r}")
            seen.add(query.id)

    def __len__(self) -> int:
        return len(self.queries)

    def format_of(self, query: Query) -> AnswerFormat:
        chosen = self.answer_format
        return chosen if isinstance(chosen, AnswerFormat) else chosen(query)

    def items(self) -> Iterator[Query]:
        return iter(self.queries)

    def prompt(self, query: Query) -> str:
        return self.format_of(query).prompt(query)

    def parse(self, text: str, query: Query) -> str | None:
        return self.format_of(query).read(text, query)

    def score(self, query: Query, answer: str | None) -> bool | None:
        return self.format_of(query).score(query, answer)

    def same_answer(self, query: Query, first: str, second: str) -> bool:
        return self.format_of(query).same(query, first, second)

    def free_text(self, query: Query) -> bool:
        return self.format_of(query).free_text


def first(queries: Sequence[Query], limit: int | None) -> tuple[Query, ...]:
    """The first `limit` queries in file order (all of them when `limit` is None)."""
    return tuple(queries if limit is None else queries[:limit])


def check_limit(limit: int | None) -> int | None:
    """A limit is None or a positive integer; anything else is the user's error."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise AgentBalanceError(f"--limit must be a positive integer, got {limit!r}")
    return limit
