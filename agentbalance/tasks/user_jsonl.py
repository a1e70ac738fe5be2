"""The user's own JSONL query file as a task: each line's domain and answer format follow from what the line gives.

It must never change a question or its choices; only a gold given as a choice's text becomes that choice's letter.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.query import DOMAINS, Query, read_queries
from agentbalance.tasks.formats import EXACT, FREE, MATH, MCQ, PROGRAM, AnswerFormat
from agentbalance.tasks.list_task import ListTask

_MATHEMATICAL = re.compile(
    r"^\$*\s*[-+]?(\d[\d,]*(\.\d*)?|\.\d+)(\s*/\s*\d+)?\s*%?\s*\$*$"  # 42, -3.5, 1,000, 3/7, 50%
    r"|\\[a-zA-Z]+|\^|_\{"  # LaTeX: \frac, \sqrt, x^2, a_{n}
)


def read_user_queries(path: Path) -> list[Query]:
    """The file via `read_queries`; each query's domain resolved (see `resolve_domain`), MCQ golds as letters."""
    queries = []
    for query in read_queries(path):
        domain = resolve_domain(query)
        update: dict[str, object] = {"domain": domain, "answer": _gold_letter(query, path)}
        if query.domain is not None and query.domain != domain:
            update["metadata"] = {**query.metadata, "label": query.domain}
        queries.append(query.model_copy(update=update))
    return queries


def resolve_domain(query: Query) -> str:
    """The line's own domain when it is general/math/code; else choices -> general, a numeric/LaTeX gold -> math,
    anything else -> general."""
    if query.domain in DOMAINS:
        return query.domain
    if query.choices:
        return "general"
    if query.answer is not None and _MATHEMATICAL.search(query.answer.strip()):
        return "math"
    return "general"


def _gold_letter(query: Query, path: Path) -> str | None:
    """A multiple-choice gold as its option letter: "b" -> "B", a choice's exact text -> its letter."""
    if not query.choices or query.answer is None:
        return query.answer
    gold = query.answer.strip()
    if gold.upper() in query.letters:
        return gold.upper()
    for letter, choice in zip(query.letters, query.choices, strict=True):
        if gold == choice.strip():
            return letter
    raise AgentBalanceError(
        f"{path}: query {query.id!r}: answer {query.answer!r} is neither an option letter "
        f"({', '.join(query.letters)}) nor the text of one of its choices"
    )


REFERENCE_WORDS = 10
"""A general question's gold of more words than this is a reference answer for a judge, not a short answer."""


def answer_format(query: Query) -> AnswerFormat:
    """Option letters for choices; else by domain: math expressions, programs (tests in metadata); a general
    question with a short gold asks for an exact short answer, one without a gold (or with a reference answer of
    more than `REFERENCE_WORDS` words) is open-ended: free text, answered as it stands."""
    if query.choices:
        return MCQ
    if query.domain in ("math", "code"):
        return MATH if query.domain == "math" else PROGRAM
    if query.answer is None or len(query.answer.split()) > REFERENCE_WORDS:
        return FREE
    return EXACT


def user_task(name: str, queries: Sequence[Query]) -> ListTask:
    """The task's own domain is its queries' most common one (it picks the default role library)."""
    domain = Counter(q.domain for q in queries).most_common(1)[0][0] if queries else "general"
    return ListTask(name, domain or "general", tuple(queries), answer_format)
