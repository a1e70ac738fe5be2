"""GSM8K-style final numbers: reading the last stated number and comparing numbers exactly (as fractions).

It must never round: numbers are compared as exact fractions.
"""

from __future__ import annotations

import re
from fractions import Fraction

from agentbalance.tasks.scoring.math import extract_boxed

# ---------------------------------------------------------------------------------------------------------------------
# GSM8K

_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−])?\$?[^\S\n]?(?P<value>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?![\d])"
)
_FINAL_NUMBER_CUE = re.compile(r"answer[^\S\n]*(?:is\b|:|=)", re.IGNORECASE)
_PLAIN_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:/\d+)?")


def _number_text(match: re.Match[str]) -> str:
    return ("-" if match.group("sign") else "") + match.group("value").replace(",", "")


def _first_number(text: str) -> str | None:
    match = _NUMBER.search(text)
    return _number_text(match) if match else None


def extract_final_number(text: str) -> str | None:
    """The final numeric answer of a GSM8K-style completion, commas and $ removed ("1,080." -> "1080").

    The number after "####", else the one stated after the last "answer is"/"Answer:" (after its last "=" when the
    statement is a calculation), else the one in \\boxed{}, else the last number in the text.
    """
    for marker in reversed(list(re.finditer("####", text))):
        number = _first_number(text[marker.end() :].split("\n", 1)[0])
        if number is not None:
            return number
    for cue in reversed(list(_FINAL_NUMBER_CUE.finditer(text))):
        statement = text[cue.end() :].split("\n", 1)[0]
        number = _first_number(statement.rsplit("=", 1)[-1])
        if number is not None:
            return number
    boxed = extract_boxed(text)
    if boxed is not None and (number := _first_number(boxed)) is not None:
        return number
    numbers = list(_NUMBER.finditer(text))
    return _number_text(numbers[-1]) if numbers else None


def _as_fraction(number: str) -> Fraction | None:
    cleaned = number.strip().replace("−", "-").replace("$", "").replace(",", "").replace(" ", "")
    cleaned = cleaned.rstrip(".").removesuffix("%")
    if len(cleaned) > 100 or not _PLAIN_NUMBER.fullmatch(cleaned):
        return None  # no exponents: Fraction("1e999999999") would build a billion-digit integer
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


def numbers_equal(a: str | None, b: str) -> bool:
    """Whether two number strings are the same number ("18" = "18.0" = "$18", "1,800" = "1800"); None -> False.

    Exact on rationals, with a 1e-9 relative slack only so that float round-off ("0.30000000000000004") is forgiven.
    """
    if a is None:
        return False
    left, right = _as_fraction(a), _as_fraction(b)
    if left is None or right is None:
        return False
    return left == right or abs(left - right) <= Fraction(1, 10**9) * max(1, abs(right))
