"""What every question generator shares: the draft of an item, random picks, exact-number formatting, wrong answers
and lead-in sentences. It must never use global random state: every choice goes through the item's own generator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar

import numpy as np

from agentbalance.worlds.simulated.questions.banks import Category, CommonBank, Fact, load_bank

T = TypeVar("T")
Rng = np.random.Generator

QUALIFIER_WEIGHT = 0.5
"""What an EXCEPT / NOT stem adds to an MCQ's difficulty."""


@dataclass(frozen=True)
class Draft:
    """One generated item before assembly: its text, gold, wrong answers (most attractive first), complexity."""

    question: str
    answer: str
    wrong: tuple[str, ...]
    complexity: float


Build = Callable[[Rng], Draft]

PYTHAGOREAN_TRIPLES = ((3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25), (20, 21, 29), (9, 40, 41))
"""Right triangles with whole sides, the smallest first (parameters of the arithmetic, not bank data)."""


def pick(rng: Rng, options: Sequence[T]) -> T:
    return options[int(rng.integers(len(options)))]


def sample(rng: Rng, options: Sequence[T], k: int) -> list[T]:
    return [options[int(j)] for j in rng.choice(len(options), size=k, replace=False)]


def between(rng: Rng, low: int, high: int) -> int:
    """Uniform integer in [low, high], both ends included."""
    return int(rng.integers(low, high + 1))


def _digits(value: int | Fraction) -> int:
    return len(str(abs(int(value))))


def magnitude(*values: int | Fraction, free: int = 2, weight: float = 0.25) -> float:
    """Difficulty from the size of the numbers: `weight` per digit beyond `free` of the largest one."""
    return weight * max(0, max(_digits(v) for v in values) - free)


def exact(value: int | Fraction) -> str:
    """Short exact answer: '42', '-3', '2.5' (terminating, <= 3 decimals), else a reduced fraction '3/7'."""
    v = Fraction(value)
    if v.denominator == 1:
        return str(v.numerator)
    for places in (1, 2, 3):
        scaled = v * 10**places
        if scaled.denominator == 1:
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            sign = "-" if v < 0 else ""
            return f"{sign}{digits[:-places]}.{digits[-places:]}"
    return f"{v.numerator}/{v.denominator}"


def ratio(value: int | Fraction) -> str:
    """A probability or share as a reduced fraction ('3/8'), or an integer when whole."""
    v = Fraction(value)
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def three_wrong(gold: str, candidates: Sequence[str], spare: Callable[[int], str]) -> tuple[str, str, str]:
    """The first three candidates that differ from gold and from each other, topped up from `spare(1)`, ..."""
    out: list[str] = []
    for candidate in candidates:
        if candidate != gold and candidate not in out:
            out.append(candidate)
        if len(out) == 3:
            return (out[0], out[1], out[2])
    k = 1
    while len(out) < 3:
        candidate = spare(k)
        if candidate != gold and candidate not in out:
            out.append(candidate)
        k += 1
    return (out[0], out[1], out[2])


def numeric_wrong(
    gold: int | Fraction,
    candidates: Sequence[int | Fraction],
    fmt: Callable[[int | Fraction], str] = exact,
    positive: bool = True,
) -> tuple[str, str, str]:
    """Wrong numeric answers (formatted) in the given order of attractiveness, topped up by gold +- small steps."""

    def spare(k: int) -> str:
        step = (k + 1) // 2
        value = Fraction(gold) + (step if k % 2 else -step)
        if positive and value <= 0:
            value = Fraction(gold) + step + 10
        return fmt(value)

    usable = [c for c in candidates if not positive or Fraction(c) > 0]
    return three_wrong(fmt(gold), [fmt(c) for c in usable], spare)


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _signed(coefficient: int, term: str, first: bool = False) -> str:
    """One term of a polynomial or linear expression: '+ 3x', '- x', '7' ..."""
    size = abs(coefficient)
    body = (term if size == 1 and term else f"{size}{term}") if term else str(size)
    if first:
        return f"-{body}" if coefficient < 0 else body
    return f"- {body}" if coefficient < 0 else f"+ {body}"


def linear(terms: Sequence[tuple[int, str]]) -> str:
    """Render sum(c * t) skipping zero terms, e.g. [(2, 'x'), (-1, 'y'), (5, '')] -> '2x - y + 5'."""
    parts: list[str] = []
    for coefficient, term in terms:
        if coefficient == 0:
            continue
        parts.append(_signed(coefficient, term, first=not parts))
    return " ".join(parts) if parts else "0"


# ---------------------------------------------------------------------------------------------------------------------
# People and framing sentences (banks/common.yaml).


def names() -> tuple[str, ...]:
    """People's names, for the characters of word problems and the askers of lead-in sentences."""
    return load_bank(CommonBank).names


def things() -> tuple[str, ...]:
    """Countable things of word problems (plural)."""
    return load_bank(CommonBank).things


def articles(word: str) -> dict[str, str]:
    """'a geography' / 'an algebra' for templates that put an article before a subject."""
    article = "an" if word[0].lower() in "aeiou" else "a"
    return {"a_course": f"{article} {word}", "A_course": f"{article.capitalize()} {word}"}


def lead_in(rng: Rng, courses: Sequence[str]) -> str:
    """A framing sentence (a name and the subject), as exam items come from somewhere; it varies the wording."""
    course = pick(rng, courses)
    return pick(rng, load_bank(CommonBank).lead_ins).format(name=pick(rng, names()), course=course, **articles(course))


def with_lead_in(rng: Rng, courses: Sequence[str], build: Build) -> Draft:
    """`build`'s item prefixed with a framing sentence (subjects whose stems alone repeat too often)."""
    lead = lead_in(rng, courses)
    draft = build(rng)
    return Draft(f"{lead} {draft.question}", draft.answer, draft.wrong, draft.complexity)


def two_names(rng: Rng) -> tuple[str, str]:
    first, second = sample(rng, names(), 2)
    return first, second


# ---------------------------------------------------------------------------------------------------------------------
# Fact banks: a fact (stems, correct option, three wrong options most attractive first, obscurity offset) and a
# category (members vs look-alikes), asked positively or with an EXCEPT / NOT qualifier.


def ask_fact(rng: Rng, courses: Sequence[str], fact: Fact) -> Draft:
    stem = pick(rng, fact.stems)
    return Draft(f"{lead_in(rng, courses)} {stem}", fact.correct, fact.wrong, fact.offset)


def ask_category(rng: Rng, courses: Sequence[str], category: Category) -> Draft:
    """Positive: one member among look-alikes. Negative (EXCEPT/NOT): one look-alike among members, the least
    typical members being the most attractive wrong answers."""
    lead = lead_in(rng, courses)
    if rng.random() < 0.5:
        correct = pick(rng, category.members)
        picked = sorted(int(j) for j in rng.choice(len(category.others), size=3, replace=False))
        wrong = tuple(category.others[j] for j in picked)
        return Draft(f"{lead} {pick(rng, category.positive)}", correct, wrong, category.offset)
    correct = pick(rng, category.others)
    picked = sorted((int(j) for j in rng.choice(len(category.members), size=3, replace=False)), reverse=True)
    wrong = tuple(category.members[j] for j in picked)
    return Draft(f"{lead} {pick(rng, category.negative)}", correct, wrong, category.offset + QUALIFIER_WEIGHT)


def ask_bank(
    rng: Rng, courses: Sequence[str], facts: Sequence[Fact], categories: Sequence[Category], p_category: float
) -> Draft:
    if categories and rng.random() < p_category:
        return ask_category(rng, courses, pick(rng, categories))
    return ask_fact(rng, courses, pick(rng, facts))
