"""Code completions: the program inside a completion's fences (or the completion itself), for the sandbox.

It must never execute model output: it only parses.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------------------------------
# Code

_PYTHON_LANGUAGES = frozenset({"python", "py", "python3", "py3", "ipython"})
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class _CodeBlock:
    """One fenced block: the language its opener names ("" when bare) and its content, fences excluded."""

    language: str
    code: str


def _code_blocks(text: str) -> list[_CodeBlock]:
    """Fenced blocks in order: the opener's info string gives the language; an unclosed last block runs to the end."""
    blocks: list[_CodeBlock] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opener = _FENCE_OPEN.match(lines[i])
        i += 1
        if opener is None:
            continue
        fence, indent = opener.group("fence"), len(opener.group("indent"))
        language = re.match(r"[{.]*([A-Za-z0-9_+-]*)", opener.group("info").strip()).group(1).lower()
        body: list[str] = []
        while i < len(lines):
            line = lines[i]
            i += 1
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            leading = len(line) - len(line.lstrip(" \t"))
            body.append(line[min(indent, leading) :])
        blocks.append(_CodeBlock(language, "\n".join(body).strip("\n")))
    return blocks


def _defines(code: str, entry_point: str) -> bool:
    return (
        re.search(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", code, re.MULTILINE) is not None
    )


def _parses(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def extract_code(text: str, entry_point: str | None = None) -> str | None:
    """The Python program in a completion, for the sandbox to run; None when there is none.

    Fences are parsed as lines (```python, ```py, bare ```), never by stripping characters. Among python and untagged
    blocks, the last that defines `def {entry_point}(` wins; else the last python-tagged block; else the last untagged
    block that parses. Unfenced text is returned when it parses and defines entry_point (or, without one, contains
    a statement beyond a bare expression, so that a word of prose is not "code").
    """
    blocks = _code_blocks(text)
    if blocks:
        candidates = [b for b in blocks if b.language in _PYTHON_LANGUAGES or not b.language]
        if entry_point:
            defining = [b for b in candidates if _defines(b.code, entry_point)]
            if defining:
                return defining[-1].code
        tagged = [b for b in candidates if b.language]
        if tagged:
            return tagged[-1].code
        untagged = [b for b in candidates if b.code.strip() and _parses(b.code) is not None]
        return untagged[-1].code if untagged else None

    code = textwrap.dedent(text).strip("\n")
    module = _parses(code)
    if module is None or not code.strip():
        return None
    if entry_point:
        return code if _defines(code, entry_point) else None
    return code if any(not isinstance(node, ast.Expr) for node in module.body) else None
