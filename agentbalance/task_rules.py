"""A run's rules for its answers: who grades them and when two are one answer, from the task when the run has one,
else from the world. Built here only (`TaskRules.of`), so the choice between the task's rule and the world's is
written once; it never executes anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentbalance.agreement import FREE_TEXT_THRESHOLD, answers_agree
from agentbalance.query import SameAnswer
from agentbalance.runtime.execution import Grader
from agentbalance.tasks.base import Task
from agentbalance.worlds.base import World


@dataclass(frozen=True)
class TaskRules:
    """How a run treats answers. `grader` scores an answer: the task's scorer, or None where there is no task (the
    world grades, as the simulated and replay worlds and a judge do, else nobody). `same_answer` says when two
    answers are one answer (conditional agents): the task's rule, else the world's (`agreement.answers_agree`).

    The task's `parse` is not here: a live world reads its replies with it, so it goes into the world's
    `LiveOptions` before any world exists; every other reader gets answers already read."""

    grader: Grader | None
    same_answer: SameAnswer

    @classmethod
    def of(
        cls,
        task: Task | None,
        world: World | None,
        encoder: object | None = None,
        threshold: float = FREE_TEXT_THRESHOLD,
    ) -> TaskRules:
        """The rules of `task` in `world` (no task: the world's; no world either: real replies, as the framework
        adapters' model clients give). Free text agrees by the shipped encoder's cosine from `threshold`; `encoder`
        is reused when it is the shipped model."""
        grader = task.score if task is not None else None
        return cls(grader, answers_agree(task, world, encoder, threshold))
