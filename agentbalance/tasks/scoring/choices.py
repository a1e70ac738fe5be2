"""Reading the option letter a completion chose (MMLU-style multiple choice): pure functions on text.

It must never guess: an answer the text does not state is None.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

from agentbalance.tasks.scoring.math import boxed_contents, unwrap_text_commands

# ---------------------------------------------------------------------------------------------------------------------
# Multiple choice

_ANSWER_CUE = (
    r"(?:\banswer\b|\b(?:correct|right|best|final)[^\S\n]+(?:option|choice)\b)"
    # a connector is required ("answer is", "Answer:", "**Answer:**"), so "I will answer A" is not a statement
    r"(?:[^\S\n]*(?:(?:\*\*|__)[^\S\n]*)?(?::|=|\bis\b|\bwas\b|\b(?:would|should|will|must)[^\S\n]+be\b|[-–—](?=\s)))+"
    r"[\s*_$\"'`]*"
    r"(?:(?:option|choice|letter)\b[\s*_$:]*)?"
    r"(?:(?P<open>[\(\[{])[\s*_$]*)?"
)
_NOT_PART_OF_WORD = r"(?![A-Za-z0-9]|['’][A-Za-z])"
_LOWERCASE_LETTER_ENDS = re.compile(r"[^\S\n]*(?:$|[\n.,;:!?)\]}*$\"'`])")
_PRONOUN_I = re.compile(
    r"[^\S\n]+(?:think|believe|am|guess|would|will|feel|can|need|have|do|don't|must|should|could|might|was)\b",
    re.IGNORECASE,
)
_ARTICLE_OR_PRONOUN = re.compile(r"[^\S\n]+(?P<word>[a-z]+)")
_LETTER_VERBS = frozenset(
    {"is", "seems", "appears", "looks", "would", "should", "must", "fits", "matches", "because", "since", "as"}
)
_LINE_DECORATION = " \t>#-*_"  # characters that may surround a bare answer line (a set on purpose: markdown marks)


@lru_cache(maxsize=32)
def _choice_patterns(valid: tuple[str, ...]) -> dict[str, re.Pattern[str]]:
    upper = "".join(re.escape(c) for c in valid)
    both = upper + "".join(re.escape(c.lower()) for c in valid)
    return {
        "statement": re.compile(_ANSWER_CUE + rf"(?P<letter>[{both}]){_NOT_PART_OF_WORD}", re.IGNORECASE),
        "option": re.compile(
            rf"\b(?:option|choice)[^\S\n]*(?P<open>[\(\[])?(?P<letter>[{both}]){_NOT_PART_OF_WORD}", re.IGNORECASE
        ),
        "bare_line": re.compile(rf"[\(\[]?(?P<letter>[{both}])[\)\]]?[.:]?"),
        "line_marker": re.compile(rf"[\(\[]?(?P<letter>[{upper}])[\)\].:](?:\s|\*|$)"),
        "marker": re.compile(rf"\((?P<a>[{upper}])\)|\[(?P<b>[{upper}])\]|\*\*(?P<c>[{upper}])\*\*"),
        "standalone": re.compile(rf"(?<![A-Za-z0-9'’\\])(?P<letter>[{upper}]){_NOT_PART_OF_WORD}"),
    }


def _valid_letters(letters: Sequence[str]) -> tuple[str, ...]:
    valid = tuple(str(letter).strip().upper() for letter in letters)
    for letter in valid:
        if len(letter) != 1 or not letter.isalpha() or not letter.isascii():
            raise ValueError(f"choice letters must be single ASCII letters, got {letter!r} in {letters!r}")
    return valid


def _is_word_not_letter(text: str, match: re.Match[str]) -> bool:
    """An "A"/"I" followed by an ordinary word is the article/pronoun ("A cat", "I think"), not an option."""
    letter = match.group("letter")
    if letter not in "AI":
        return False
    following = _ARTICLE_OR_PRONOUN.match(text, match.end())
    return following is not None and following.group("word") not in _LETTER_VERBS


def _statement_letters(text: str, patterns: dict[str, re.Pattern[str]]) -> Iterator[tuple[int, str]]:
    """(position, letter) of every explicit "answer is X"/"Answer: X" statement that names a valid letter."""
    for match in patterns["statement"].finditer(text):
        letter = match.group("letter")
        if not match.group("open"):
            if letter.islower() and not _LOWERCASE_LETTER_ENDS.match(text, match.end()):
                continue  # "the answer is a bit unclear"
            if letter == "I" and _PRONOUN_I.match(text, match.end()):
                continue  # "Answer: I think ..."
        yield match.start(), letter.upper()


def _boxed_letters(text: str, patterns: dict[str, re.Pattern[str]]) -> Iterator[tuple[int, str]]:
    """(position, letter) of every \\boxed{X} whose content is a valid letter, possibly wrapped or followed by text."""
    for start, content in boxed_contents(text):
        inner = unwrap_text_commands(content).strip().strip("()[]{}$* ")
        match = patterns["bare_line"].match(inner)
        if match and (match.end() == len(inner) or not inner[match.end()].isalnum()):
            yield start, match.group("letter").upper()


def extract_choice(text: str, letters: Sequence[str] = "ABCD") -> str | None:
    """The option letter a completion commits to, or None.

    Tiers, strongest first, so that a stated answer beats a letter merely mentioned: the LAST explicit statement
    ("answer is (C)", "**Answer:** C", "\\boxed{C}"); the last line that is only a letter ("C", "(C)", "**C**");
    the last "Option C"; a line opening with an option marker ("C. Paris") when only one letter does; a
    parenthesised or bold marker when only one letter is marked; a standalone capital when only one appears.
    Letters inside words and the article/pronoun "A"/"I" before a word are never taken.
    """
    valid = _valid_letters(letters)
    if not valid or not text:
        return None
    patterns = _choice_patterns(valid)

    stated = [*_statement_letters(text, patterns), *_boxed_letters(text, patterns)]
    if stated:
        return max(stated)[1]

    lines = text.splitlines()
    for line in reversed(lines):
        core = line.strip(_LINE_DECORATION)
        match = patterns["bare_line"].fullmatch(core)
        if match:
            return match.group("letter").upper()

    for match in reversed(list(patterns["option"].finditer(text))):
        letter = match.group("letter")
        if letter.islower() and not match.group("open") and not _LOWERCASE_LETTER_ENDS.match(text, match.end()):
            continue
        return letter.upper()

    opening = {m.group("letter") for line in lines if (m := patterns["line_marker"].match(line.lstrip(" \t>*-#")))}
    if len(opening) == 1:
        return opening.pop()

    marked = {next(g for g in m.groups() if g) for m in patterns["marker"].finditer(text)}
    if len(marked) == 1:
        return marked.pop()

    standalone = {m.group("letter") for m in patterns["standalone"].finditer(text) if not _is_word_not_letter(text, m)}
    if len(standalone) == 1:
        return standalone.pop()
    return None
