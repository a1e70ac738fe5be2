"""A query: what a user asks a MAS (question, optional choices) plus what only scoring may see (gold).

The controller must only ever read `question` and `choices`; `answer` (gold) and `metadata` are for
worlds and scorers.
"""

from __future__ import annotations

import string
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

DOMAINS = ("general", "math", "code")


class Query(BaseModel):
    """One question. `domain` is one of DOMAINS when known; `answer` is the gold answer when known."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    choices: tuple[str, ...] | None = None
    answer: str | None = None
    domain: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

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
