"""The simulated world's synthetic domains as tasks (`synthetic-general|math|code`): generated queries, read like the
real domain's answers, scored by exact match. It must never grade more leniently: the world's answers are canonical.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from agentbalance.query import DOMAINS, Query
from agentbalance.tasks.formats import CODE_INSTRUCTION, MATH, MCQ, AnswerFormat
from agentbalance.tasks.list_task import ListTask
from agentbalance.tasks.registry import TaskFactory
from agentbalance.worlds.simulated.questions import generate_synthetic

DEFAULT_COUNT = 500
_BEHAVIOUR = re.compile(r"\bbehaviour:\s*([\w-]+)", re.IGNORECASE)


def _exact_gold(query: Query, answer: str) -> bool:
    return answer.strip() == str(query.answer).strip()


def _read_behaviour(text: str, query: Query) -> str | None:
    """A synthetic program cannot run: its answer is the `behaviour: X` label a simulated completion carries."""
    labels = _BEHAVIOUR.findall(text)
    return labels[-1] if labels else None


SYNTHETIC_FORMATS = {
    "general": replace(MCQ, check=_exact_gold),
    "math": replace(MATH, check=_exact_gold),
    "code": AnswerFormat("behaviour", CODE_INSTRUCTION, _read_behaviour, _exact_gold),
}


def synthetic_task(domain: str, count: int | None, seed: int) -> ListTask:
    """`count` (default 500) generated queries of a synthetic domain; the same seed gives the same items."""
    queries = generate_synthetic(domain, DEFAULT_COUNT if count is None else count, seed)
    return ListTask(f"synthetic-{domain}", domain, tuple(queries), SYNTHETIC_FORMATS[domain])


SYNTHETIC_TASKS: Mapping[str, TaskFactory] = MappingProxyType(
    {f"synthetic-{domain}": functools.partial(synthetic_task, domain) for domain in DOMAINS}
)
"""The synthetic tasks by name, as `load_task(..., generated=...)` takes them (`agentbalance.worlds.open_task`)."""
