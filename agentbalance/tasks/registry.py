"""The task registry: a task name -> where its queries come from (a local file in the public format, or the hub)
and how answers are read and scored. It must never import worlds, policy or runtime, nor `datasets` at import time.

Tasks that are generated rather than read (the simulated world's synthetic domains) live in the layer above and
are handed to `load_task` by name (`generated`); `agentbalance.worlds.open_task` does so for every command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.tasks.base import Task
from agentbalance.tasks.competition_math import MATH500_HUB, math_queries, read_math
from agentbalance.tasks.formats import MATH, MCQ, NUMBER, PROGRAM, AnswerFormat
from agentbalance.tasks.gsm8k import GSM8K_HUB, gsm8k_queries, read_gsm8k
from agentbalance.tasks.humaneval import HUMANEVAL, HUMANEVAL_HUB, humaneval_queries, read_humaneval
from agentbalance.tasks.list_task import ListTask, check_limit, first
from agentbalance.tasks.mbpp import MBPP_HUB, mbpp_queries, read_mbpp
from agentbalance.tasks.mmlu import MMLU_HUB, MMLU_PRO_HUB, mmlu_pro_queries, mmlu_queries, read_mmlu, read_mmlu_pro
from agentbalance.tasks.records import HubDataset, Record, hub_records
from agentbalance.tasks.replay_questions import load_replay_questions, replay_task
from agentbalance.tasks.served_questions import read_served_questions
from agentbalance.tasks.user_jsonl import read_user_queries, user_task


@dataclass(frozen=True)
class TaskSource:
    """One named task: how to read a local path (`formats` says which), and optionally a hub dataset.

    `build` turns the (limited) queries into the task; by default a ListTask of `domain` with `answer_format`.
    """

    formats: str
    read: Callable[[Path], list[Query]]
    domain: str = "general"
    answer_format: AnswerFormat = MCQ
    hub: HubDataset | None = None
    convert: Callable[[Sequence[Record]], list[Query]] | None = None
    build: Callable[[str, Sequence[Query]], ListTask] | None = None

    def task(self, name: str, queries: Sequence[Query]) -> ListTask:
        if self.build is not None:
            return self.build(name, queries)
        return ListTask(name, self.domain, tuple(queries), self.answer_format)


SOURCES: dict[str, TaskSource] = {
    "mmlu": TaskSource(
        "a local MMLU <subject>_test.csv file or a folder of them", read_mmlu, hub=MMLU_HUB, convert=mmlu_queries
    ),
    "mmlu-pro": TaskSource("a local MMLU-Pro JSONL file", read_mmlu_pro, hub=MMLU_PRO_HUB, convert=mmlu_pro_queries),
    "math": TaskSource("a local MATH-500 JSONL or MATH folder", read_math, "math", MATH, MATH500_HUB, math_queries),
    "gsm8k": TaskSource("a local GSM8K JSONL file", read_gsm8k, "math", NUMBER, GSM8K_HUB, gsm8k_queries),
    "humaneval": TaskSource(
        "a local HumanEval JSONL file", read_humaneval, "code", HUMANEVAL, HUMANEVAL_HUB, humaneval_queries
    ),
    "mbpp": TaskSource("a local MBPP JSONL file", read_mbpp, "code", PROGRAM, MBPP_HUB, mbpp_queries),
    "jsonl": TaskSource("your JSONL query file", read_user_queries, build=user_task),
    "replay": TaskSource("a replay-world folder or its questions.jsonl", load_replay_questions, build=replay_task),
    "served": TaskSource("a folder of `serve --log-dir` or its requests.jsonl", read_served_questions, build=user_task),
}
TASK_NAMES: tuple[str, ...] = tuple(SOURCES)
"""The tasks read from data; `load_task` also knows the `generated` ones it is given."""

TaskFactory = Callable[[int | None, int], Task]
"""A task made rather than read: (limit, seed) -> the task."""
NO_GENERATED_TASKS: Mapping[str, TaskFactory] = MappingProxyType({})


def load_task(
    name: str,
    data: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    generated: Mapping[str, TaskFactory] = NO_GENERATED_TASKS,
) -> Task:
    """The task `name` on `data` (a local path in the dataset's public format; None: the hub, where there is one).

    `limit` N keeps the first N items in file order (sorted file names for folders). `generated` names tasks made
    rather than read (the simulated world's synthetic domains): they ignore `data`, and `seed` picks their items.
    """
    valid = (*TASK_NAMES, *generated)
    if name not in valid:
        raise AgentBalanceError(f"unknown task {name!r}; valid tasks: {', '.join(valid)}")
    limit = check_limit(limit)
    if name in generated:
        return generated[name](limit, seed)
    source = SOURCES[name]
    if data is not None:
        queries = source.read(Path(data))
    elif source.hub is not None and source.convert is not None:
        queries = source.convert(hub_records(source.hub, name, source.formats))
    else:
        raise AgentBalanceError(f"task {name!r} needs --data PATH ({source.formats})")
    return source.task(name, first(queries, limit))
