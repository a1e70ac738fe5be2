"""When two answers are one answer: the rule a conditional agent's inputs are compared by, in every execution path.

Letters, numbers and programs compare as their task says (exact, math equivalence, identical programs). Free text
(an explanation, advice, a served chat reply) almost never repeats word for word, so it compares by meaning: two
replies agree when the shipped sentence encoder puts them close (`MeaningAgreement`). The threshold was chosen on
development data by benchmarks/studies/free_text_agreement.py (docs/worlds.md, "Free-text agreement"). This sits
above `tasks` because tasks may not import the encoder: a task only marks which of its answers are free text.
"""

from __future__ import annotations

from agentbalance.encoders import DEFAULT_ENCODER, TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, SameAnswer
from agentbalance.tasks.base import Task
from agentbalance.tasks.formats import same_text
from agentbalance.worlds.base import RecordedWorld, World, same_recorded_answer

FREE_TEXT_THRESHOLD = 0.85
"""The cosine from which two free-text answers agree: the best balanced accuracy on the first half of the study's
questions (benchmarks/studies/results/free_text_agreement.json), checked on the second half, never chosen there."""

MEANING_MIN_WORDS = 4
"""Answers shorter than this (a word, a number, a letter) compare exactly: an encoder puts "4" and "5", or "yes"
and "no", close together, so closeness says nothing about whether short answers agree."""


class MeaningAgreement:
    """Free text agrees when it is the same text (normalised) or, both answers long enough to carry a meaning,
    when the shipped encoder's cosine is at least `threshold`. `encoder` is reused when it is the shipped model
    (the threshold holds for that model only), else one is loaded at the first comparison that needs it, so a run
    whose answers never reach one never loads it."""

    def __init__(self, encoder: object | None = None, threshold: float = FREE_TEXT_THRESHOLD) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise AgentBalanceError(f"the free-text agreement threshold must be in [0, 1], got {threshold}")
        self.threshold = threshold
        shipped = isinstance(encoder, TextEncoder) and encoder.model_name == DEFAULT_ENCODER
        self._encoder: TextEncoder | None = encoder if shipped else None  # type: ignore[assignment]

    def __call__(self, query: Query, first: str, second: str) -> bool:
        if same_text(query, first, second):
            return True
        if self.threshold >= 1.0 or min(len(first.split()), len(second.split())) < MEANING_MIN_WORDS:
            return False  # 1.0: only the same text agrees
        return self.cosine(first, second) >= self.threshold

    def cosine(self, first: str, second: str) -> float:
        """The encoder's cosine of two texts (its embeddings are unit vectors, cached like every embedding)."""
        if self._encoder is None:
            self._encoder = TextEncoder(use_disk_cache=False, memory_limit=4096)
        vectors = self._encoder.encode([first, second])
        return float(vectors[0] @ vectors[1])


class TaskAgreement:
    """A task's rule: its exact `same_answer`, by meaning for the queries whose answers it marks as free text."""

    def __init__(self, task: Task, meaning: MeaningAgreement) -> None:
        self.task = task
        self.meaning = meaning

    def __call__(self, query: Query, first: str, second: str) -> bool:
        if self.task.free_text(query):
            return self.meaning(query, first, second)
        return self.task.same_answer(query, first, second)


class ReplyAgreement:
    """Without a task, in a world of real replies (live, served): option letters compare exactly, every other
    answer (a stated math answer, else the whole reply: `worlds.live.default_parse`) as free text."""

    def __init__(self, meaning: MeaningAgreement) -> None:
        self.meaning = meaning

    def __call__(self, query: Query, first: str, second: str) -> bool:
        if query.choices:
            return same_recorded_answer(query, first, second)
        return self.meaning(query, first, second)


def answers_agree(
    task: Task | None, world: World | None, encoder: object | None = None, threshold: float = FREE_TEXT_THRESHOLD
) -> SameAnswer:
    """How conditional agents compare answers: the task's rule (free text by meaning, at `threshold`), else in the
    simulated and replay worlds as their canonical answers, else (real replies without a task: a live world, or no
    world but an agent framework's model clients) `ReplyAgreement`."""
    meaning = MeaningAgreement(encoder, threshold)
    if task is not None:
        return TaskAgreement(task, meaning)
    if world is not None and (world.simulated or isinstance(world, RecordedWorld)):
        return same_recorded_answer
    return ReplyAgreement(meaning)
