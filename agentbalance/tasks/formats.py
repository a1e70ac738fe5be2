"""Answer formats: how one kind of answer (option letter, math expression, number, program, free text) is asked for,
read from a completion and checked against the gold. Model-written programs run only in the sandbox, never here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentbalance.query import Query
from agentbalance.tasks.sandbox import check_program
from agentbalance.tasks.scoring import (
    extract_boxed,
    extract_choice,
    extract_code,
    extract_final_number,
    extract_math_answer,
    math_equivalent,
    numbers_equal,
)

BOXED_INSTRUCTION = "Put your final answer in \\boxed{}."
CODE_INSTRUCTION = "Write the complete Python function in one ```python code block."


def _gold_answer(query: Query) -> Any:
    return query.answer


def _gold_tests(query: Query) -> Any:
    return query.metadata.get("test") or None


def same_text(query: Query, first: str, second: str) -> bool:
    """Free-form answers agree when they are equal after `normalise_text` (case, spacing, quotes, a final stop)."""
    return normalise_text(first) == normalise_text(second)


@dataclass(frozen=True)
class AnswerFormat:
    """Ask (`present` + `instruction`), read (`read`), check (`check`) and compare (`same`) one kind of answer.

    `check` is only called with a known gold (`gold(query)` not None) and a parsed answer: `score` handles the rest.
    `same` says whether two parsed answers are the same answer as the task reads them (a conditional agent
    runs only when its inputs' answers are not all `same`); it never sees the gold. `free_text` marks answers
    whose agreement is a matter of meaning: the layer above the tasks (agentbalance.agreement) compares them
    with the sentence encoder, which tasks may not import; `same` is then only the exact part of that rule.
    """

    name: str
    instruction: str
    read: Callable[[str, Query], str | None]
    check: Callable[[Query, str], bool]
    gold: Callable[[Query], Any] = _gold_answer
    present: Callable[[Query], str] = Query.render
    same: Callable[[Query, str, str], bool] = same_text
    free_text: bool = False

    def prompt(self, query: Query) -> str:
        presented = self.present(query)
        return f"{presented}\n\n{self.instruction}" if self.instruction else presented

    def score(self, query: Query, answer: str | None) -> bool | None:
        """None when the gold is unknown, False for no answer, else the check."""
        if self.gold(query) is None:
            return None
        if answer is None or not answer.strip():
            return False
        return self.check(query, answer)


# ----------------------------------------------------------------------------- option letters


def multiple_choice(letters: Callable[[Query], Sequence[str]] = lambda query: query.letters) -> AnswerFormat:
    """Option letters; `letters` says which ones a query offers (its choices' letters by default)."""

    def read(text: str, query: Query) -> str | None:
        return extract_choice(text, letters(query))

    instruction = "Answer with the letter of the correct choice."
    return AnswerFormat("letter", instruction, read, same_letter, same=_letters_equal)


def same_letter(query: Query, answer: str) -> bool:
    return _letters_equal(query, answer, str(query.answer))


def _letters_equal(query: Query, first: str, second: str) -> bool:
    return first.strip().upper() == second.strip().upper()


MCQ = multiple_choice()


# ----------------------------------------------------------------------------- math and numbers


def _read_math(text: str, query: Query) -> str | None:
    return extract_math_answer(text)


def _math_equivalent(query: Query, answer: str) -> bool:
    return math_equivalent(answer, str(query.answer))


def _read_number(text: str, query: Query) -> str | None:
    return extract_final_number(text)


def _numbers_equal(query: Query, answer: str) -> bool:
    return numbers_equal(answer, str(query.answer))


def _same_math(query: Query, first: str, second: str) -> bool:
    return math_equivalent(first, second)


def _same_number(query: Query, first: str, second: str) -> bool:
    return numbers_equal(first, second)


MATH = AnswerFormat("math", BOXED_INSTRUCTION, _read_math, _math_equivalent, same=_same_math)
NUMBER = AnswerFormat("number", BOXED_INSTRUCTION, _read_number, _numbers_equal, same=_same_number)


# ----------------------------------------------------------------------------- programs


def _read_code(text: str, query: Query) -> str | None:
    return extract_code(text, query.metadata.get("entry_point") or query.metadata.get("function"))


def _passes_tests(query: Query, answer: str) -> bool:
    return check_program(answer, query.metadata["test"], query.metadata.get("entry_point"))


def same_program(query: Query, first: str, second: str) -> bool:
    """Two programs agree only when their syntax trees are identical (names, comments and layout included
    in the comparison, formatting not): running model-written code to compare behaviour would need tests
    the controller must not see, and the prompt's own examples are too few to certify agreement, so a
    conditional agent over programs runs unless its inputs wrote the very same program."""
    try:
        return ast.dump(ast.parse(first)) == ast.dump(ast.parse(second))
    except (SyntaxError, ValueError, RecursionError):
        return False


PROGRAM = AnswerFormat("program", CODE_INSTRUCTION, _read_code, _passes_tests, gold=_gold_tests, same=same_program)
"""A program checked by the query's tests (metadata "test", "entry_point"); no tests means an unknown gold."""


# ----------------------------------------------------------------------------- free text

_ANSWER_LINE = re.compile(r"^[\s*#>_-]*(?:final\s+)?answer\s*[:：]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def read_free_text(text: str, query: Query) -> str | None:
    """The last "Answer: X" line, else the last \\boxed{}, else the last non-empty line."""
    lines = _ANSWER_LINE.findall(text)
    if lines:
        return lines[-1].strip("*_ ") or None
    boxed = extract_boxed(text)
    if boxed is not None:
        return boxed
    rest = [line.strip() for line in text.splitlines() if line.strip()]
    return rest[-1] if rest else None


def normalise_text(text: str) -> str:
    """Case, surrounding whitespace and quotes, inner runs of spaces and a final full stop do not matter."""
    return " ".join(text.split()).strip("\"'`").rstrip(".").casefold()


def _same_text(query: Query, answer: str) -> bool:
    return same_text(query, answer, str(query.answer))


EXACT = AnswerFormat("exact", "End with a line of the form 'Answer: <your answer>'.", read_free_text, _same_text)
"""A short answer checked against a short gold (a date, a name): asked for on a line of its own."""


def read_whole_text(text: str, query: Query) -> str | None:
    """The whole reply is the answer (an explanation, advice, a summary): only surrounding space is dropped."""
    return text.strip() or None


FREE = AnswerFormat("free", "", read_whole_text, _same_text, free_text=True)
"""An open-ended reply: asked as the question stands, read whole, compared by meaning (`free_text`). A judge grades
it (a gold is then the reference answer the judge reads); without a judge only an exact match of the gold counts."""
