"""MATH answers: boxed and stated final answers, their normalisation, and equivalence via whitelisted sympy.

It must never execute model output: sympy only sees whitelisted arithmetic tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from tokenize import TokenError
from typing import Any

# ---------------------------------------------------------------------------------------------------------------------
# \boxed{...}

_BOXED = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")


def _brace_partners(text: str) -> dict[int, int]:
    """Index of each "{" -> index of its matching "}", in one pass; escaped braces (\\{ \\}) are content."""
    partners: dict[int, int] = {}
    stack: list[int] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            partners[stack.pop()] = i
        i += 1
    return partners


def boxed_contents(text: str) -> Iterator[tuple[int, str]]:
    """(position, content) of each complete \\boxed{...}/\\fbox{...} (and the brace-less "\\boxed 5" form)."""
    partners: dict[int, int] | None = None
    for match in _BOXED.finditer(text):
        i = match.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "{":
            if partners is None:
                partners = _brace_partners(text)  # linear once, so many unclosed \boxed{ cannot make this quadratic
            close = partners.get(i)
            if close is not None:
                yield match.start(), text[i + 1 : close]
        elif i > match.end() and i < len(text):
            token = re.match(r"[^\s$]+", text[i:])
            if token:
                yield match.start(), token.group()


def extract_boxed(text: str) -> str | None:
    """Content of the LAST \\boxed{...} or \\fbox{...}, nested braces kept whole; None when there is none.

    The last one, because models box intermediate results before the final one.
    """
    last = None
    for _, content in boxed_contents(text):
        last = content
    return last.strip() if last is not None else None


# ---------------------------------------------------------------------------------------------------------------------
# MATH

_MATH_CUE = re.compile(r"(?:final[^\S\n]+answer|answer)[^\S\n]*(?:is\b|:|=)[^\S\n]*:?|####", re.IGNORECASE)


def _stated_answer(rest: str) -> str | None:
    """The answer in the rest of a "The answer is ..." line: its first math span, else up to the sentence's end."""
    rest = rest.strip().strip("*").strip()
    for opener, closer in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if rest.startswith(opener):
            end = rest.find(closer, len(opener))
            if end > len(opener):
                return rest[len(opener) : end].strip()
    answer = re.split(r"\.(?:\s|$)", rest, maxsplit=1)[0].strip()
    return answer or None


def extract_math_answer(text: str) -> str | None:
    """The final answer of a MATH solution: the last \\boxed{}, else the last "The answer is X"/"Final answer: X"/
    "#### X" statement, else None. Returned as written; `math_equivalent` normalises.
    """
    boxed = extract_boxed(text)
    if boxed:
        return boxed
    cues = list(_MATH_CUE.finditer(text))
    for cue in reversed(cues):
        line_end = text.find("\n", cue.end())
        answer = _stated_answer(text[cue.end() : line_end if line_end >= 0 else len(text)])
        if answer:
            return answer
    return None


_NORMALIZE_MAX_CHARS = 2000
"""Longer strings are only trimmed: no MATH answer is that long, and the structural fixes scan nested groups."""

_UNITS = frozenset(
    {
        *("mm", "cm", "m", "km", "in", "inch", "inches", "ft", "foot", "feet", "yd", "yard", "yards", "mi", "mile"),
        *("miles", "meter", "meters", "metre", "metres", "centimeter", "centimeters", "kilometer", "kilometers"),
        *("sq", "square", "cubic", "unit", "units", "degree", "degrees", "percent", "mph", "kph"),
        *("dollar", "dollars", "cent", "cents"),
        *("s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "hr", "hrs", "hour", "hours"),
        *("day", "days", "week", "weeks", "month", "months", "year", "years"),
        *("g", "gram", "grams", "kg", "kilogram", "kilograms", "lb", "lbs", "pound", "pounds", "oz", "ounce", "ounces"),
        *("l", "ml", "liter", "liters", "litre", "litres", "cup", "cups", "quart", "quarts", "gallon", "gallons"),
    }
)
"""Words dropped after a value ("10 dollars" -> 10); nouns such as "apples" are not units and stay."""
_TEXT_COMMANDS = r"\\(?:text|textrm|textbf|textit|textnormal|mbox|mathrm|mathbf|mathit|boldsymbol|operatorname)"
_TRAILING_TEXT_UNIT = re.compile(_TEXT_COMMANDS + r" ?\{ ?([A-Za-z][A-Za-z .]*)\}(?:\^\{?\d\}?)? ?\.? ?$")
_TEXT_WRAPPER = re.compile(_TEXT_COMMANDS + r" ?\{([^{}]*)\}")
_UNIT_TOKEN = re.compile(r"([A-Za-z]+)(?:\^\{?\d\}?)?\.?")
_LEADING_VARIABLE = re.compile(r"^(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)? ?= ?")
_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL = re.compile(r"(?<![\d.])(\d*)\.(\d+)(?![\d.])")


def unwrap_text_commands(s: str) -> str:
    for _ in range(5):  # nested \text{\textbf{...}} unwraps one level per pass
        unwrapped = _TEXT_WRAPPER.sub(r"\1", s)
        if unwrapped == s:
            break
        s = unwrapped
    return s


def _read_group(s: str, i: int) -> tuple[str, int]:
    """The LaTeX argument at s[i]: a {braced group}, a \\command or one character; (content, index after it)."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        raise ValueError("missing argument")
    if s[i] == "{":
        depth = 0
        j = i
        while j < len(s):
            if s[j] == "\\":
                j += 2
                continue
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return s[i + 1 : j], j + 1
            j += 1
        raise ValueError("unbalanced braces")
    if s[i] == "\\":
        command = re.match(r"\\[A-Za-z]+", s[i:])
        if command is None:
            raise ValueError("bare backslash")
        return command.group(), i + command.end()
    if s[i] in "}^_":
        raise ValueError(f"no argument before {s[i]!r}")
    return s[i], i + 1


def _fix_fracs(s: str) -> str:
    """\\frac12 -> \\frac{1}{2}, \\frac1{x} -> \\frac{1}{x}, recursively; malformed fractions are left as written."""
    out = []
    i = 0
    while (j := s.find("\\frac", i)) >= 0:
        out.append(s[i:j])
        k = j + len("\\frac")
        if k < len(s) and s[k].isalpha():  # another command that starts with "frac"
            out.append(s[j:k])
            i = k
            continue
        try:
            numerator, k = _read_group(s, k)
            denominator, k = _read_group(s, k)
        except ValueError:
            out.append(s[j:])
            return "".join(out)
        out.append(f"\\frac{{{_fix_fracs(numerator)}}}{{{_fix_fracs(denominator)}}}")
        i = k
    out.append(s[i:])
    return "".join(out)


def _strip_units(s: str) -> str:
    """Drop trailing units ("5 \\text{ cm}", "10 dollars", "3 \\mbox{ in}^2") after a value; a lone word stays."""
    while (match := _TRAILING_TEXT_UNIT.search(s)) and s[: match.start()].strip():
        s = s[: match.start()].rstrip()
    tokens = s.split(" ")
    while len(tokens) > 1:
        unit = _UNIT_TOKEN.fullmatch(tokens[-1])
        if not unit or unit.group(1).lower() not in _UNITS:
            break
        before = " ".join(tokens[:-1]).rstrip()
        if not before or not (before[-1].isdigit() or before[-1] in "}."):
            break
        tokens = tokens[:-1]
    return " ".join(tokens)


def _normalize_decimal(match: re.Match[str]) -> str:
    whole, fraction = match.group(1) or "0", match.group(2).rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def normalize_math_answer(answer: str) -> str:
    """A canonical string for a MATH answer, so that notational variants compare equal as strings.

    Strips $ and math delimiters, \\left/\\right and spacing commands, trailing periods, units in \\text{} or as
    plain words, degrees (^\\circ), percent signs and a leading "x ="; rewrites \\dfrac/\\tfrac to \\frac and
    \\frac12 to \\frac{1}{2}, a/b of integers to \\frac{a}{b}, "1,000" to 1000 and 0.50 to 0.5; removes spaces
    (keeping one only where a command meets a letter, "\\pi r").
    """
    s = answer.strip()
    if len(s) > _NORMALIZE_MAX_CHARS:
        return s
    boxed = extract_boxed(s)
    if boxed is not None:
        s = boxed
    s = re.sub(r"\s+", " ", s)
    s = s.replace("\\$", "").replace("$", "")
    for delimiter in ("\\(", "\\)", "\\[", "\\]"):
        s = s.replace(delimiter, "")
    s = re.sub(r"\\(?:[,;:! ]|quad(?![A-Za-z])|qquad(?![A-Za-z]))", " ", s)
    s = re.sub(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|bigg|Bigg|displaystyle)(?![A-Za-z])", "", s)
    s = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", s)
    s = re.sub(r"\^ ?\{ ?\\circ ?\}|\^ ?\\circ(?![A-Za-z])|\\circ(?![A-Za-z])|\\degree(?![A-Za-z])|°", "", s)
    s = s.replace("\\%", "").replace("%", "")
    s = s.replace("π", "\\pi ").replace("∞", "\\infty ").replace("√", "\\sqrt ")
    s = re.sub(r" +", " ", s).strip().rstrip(" .")

    s = _strip_units(s)
    s = unwrap_text_commands(s)
    s = _strip_units(s).strip().rstrip(" .")
    if s.count("=") == 1:
        s = _LEADING_VARIABLE.sub("", s)
    s = re.sub(r"(?<![\\A-Za-z])(?:infinity|inf)(?![A-Za-z])", r"\\infty", s)

    s = re.sub(r"(\\[A-Za-z]+) (?=[A-Za-z])", "\\1\x00", s).replace(" ", "").replace("\x00", " ")
    s = re.sub(r"\\sqrt ?(\\[A-Za-z]+|[A-Za-z0-9])", r"\\sqrt{\1}", s)
    s = _fix_fracs(s)
    if fraction := re.fullmatch(r"(-?)(\d+)/(\d+)", s):
        s = f"{fraction.group(1)}\\frac{{{fraction.group(2)}}}{{{fraction.group(3)}}}"
    s = s.replace("{,}", ",")
    if _THOUSANDS.fullmatch(s):
        s = s.replace(",", "")
    return _DECIMAL.sub(_normalize_decimal, s)


_SYMPY_MAX_CHARS = 200
"""Only answers this short go to sympy: sympy's parser uses eval and its simplification can be slow."""

_MAX_NUMBER_DIGITS = 30
_MAX_RESULT_DIGITS = 20_000
"""An expression whose exact value may need more digits than this (e.g. 9^{9^{9}}) is never evaluated."""

_SYMPY_COMMANDS = frozenset({"frac", "sqrt", "pi", "cdot", "times", "div", "infty"})
_SYMPY_NAMES = frozenset({"sqrt", "pi", "oo"})
_SAFE_LATEX = re.compile(r"[0-9A-Za-z\\{}()\[\]+\-*/^. ]*")
_SYMPY_TOKEN = re.compile(r"\s+|\d+(?:\.\d+)?|\.\d+|[A-Za-z]+|\*\*|[-+*/()]|.")


class _Unsupported(ValueError):
    """The string is not plain arithmetic this module is willing to hand to sympy."""


def _latex_to_python(s: str) -> str:
    """Arithmetic LaTeX -> a Python-syntax expression string: \\frac, \\sqrt, \\pi, \\infty, ^, \\cdot, \\times."""
    out = []
    i = 0
    while i < len(s):
        char = s[i]
        if char == "\\":
            command = re.match(r"\\([A-Za-z]+)", s[i:])
            if command is None or command.group(1) not in _SYMPY_COMMANDS:
                raise _Unsupported(s)
            name = command.group(1)
            i += command.end()
            if name == "frac":
                try:
                    numerator, i = _read_group(s, i)
                    denominator, i = _read_group(s, i)
                except ValueError as error:
                    raise _Unsupported(s) from error
                out.append(f"(({_latex_to_python(numerator)})/({_latex_to_python(denominator)}))")
            elif name == "sqrt":
                index = None
                if i < len(s) and s[i] == "[":
                    close = s.find("]", i)
                    if close < 0:
                        raise _Unsupported(s)
                    index, i = s[i + 1 : close], close + 1
                try:
                    radicand, i = _read_group(s, i)
                except ValueError as error:
                    raise _Unsupported(s) from error
                radicand = _latex_to_python(radicand)
                out.append(f"sqrt({radicand})" if index is None else f"(({radicand})**(1/({_latex_to_python(index)})))")
            else:
                out.append({"pi": " pi ", "infty": " oo ", "cdot": "*", "times": "*", "div": "/"}[name])
        elif char == "^":
            out.append("**")
            i += 1
            if i < len(s) and s[i] != "(":
                try:
                    exponent, i = _read_group(s, i)
                except ValueError as error:
                    raise _Unsupported(s) from error
                out.append(f"({_latex_to_python(exponent)})")
        else:
            out.append({"{": "(", "}": ")"}.get(char, char))
            i += 1
    return "".join(out)


def _with_explicit_products(python: str) -> str:
    """Validate the token stream against the whitelist and write implicit products ("2 pi", ")(") explicitly."""
    tokens: list[str] = []
    for match in _SYMPY_TOKEN.finditer(python):
        token = match.group()
        if token.isspace():
            continue
        if token[0].isalpha() and len(token) > 1 and token not in _SYMPY_NAMES:
            raise _Unsupported(token)  # "xy" or a word: never guess at multi-letter names
        if token[0] in "0123456789." and (token == "." or len(token.replace(".", "")) > _MAX_NUMBER_DIGITS):
            raise _Unsupported(token)
        if not (token[0].isalnum() or token[0] == "." or token in {"**", "+", "-", "*", "/", "(", ")"}):
            raise _Unsupported(token)
        if tokens:
            previous = tokens[-1]
            ends_operand = previous == ")" or ((previous[0].isalnum() or previous[0] == ".") and previous != "sqrt")
            starts_operand = token == "(" or token[0].isalnum() or token[0] == "."
            if ends_operand and starts_operand:
                tokens.append("*")
        if tokens and tokens[-1] == "sqrt" and token != "(":
            raise _Unsupported(python)
        tokens.append(token)
    if not tokens:
        raise _Unsupported(python)
    return " ".join(tokens)


def _digits_bound(expr: Any) -> float:
    """An upper bound on the decimal digits sympy needs to hold the exact value of an unevaluated expression.

    Each power's exponent is checked first and only then evaluated, so 9^{9^{9}} is refused without computing it.
    """
    if expr.is_Rational:  # Integer too
        return math.log10(abs(expr.p) + 1) + math.log10(expr.q)
    if expr.is_Float:
        return math.log10(abs(float(expr)) + 1)
    if expr.is_Atom:
        return 1.0
    if expr.is_Pow:
        if _digits_bound(expr.exp) > 7:
            return math.inf
        if expr.exp.free_symbols:
            exponent = 10.0
        else:
            exponent = abs(complex(expr.exp.evalf(15)))
            if not math.isfinite(exponent):
                return math.inf
        return max(_digits_bound(expr.base), 1.0) * max(exponent, 1.0) + 1
    return sum(_digits_bound(arg) for arg in expr.args)


def _to_sympy(latex: str) -> Any:
    """A sympy expression for whitelisted arithmetic LaTeX; _Unsupported for anything else or anything too big."""
    if len(latex) > _SYMPY_MAX_CHARS or not _SAFE_LATEX.fullmatch(latex):
        raise _Unsupported(latex)
    if any(name not in _SYMPY_COMMANDS for name in re.findall(r"\\([A-Za-z]+)", latex)):
        raise _Unsupported(latex)
    python = _with_explicit_products(_latex_to_python(latex))

    import sympy  # deferred: sympy's import time is paid only by MATH scoring
    from sympy.parsing.sympy_parser import parse_expr, standard_transformations

    names: dict[str, Any] = {"sqrt": sympy.sqrt, "pi": sympy.pi, "oo": sympy.oo}
    names.update({letter: sympy.Symbol(letter) for letter in set(re.findall(r"\b[A-Za-z]\b", python))})
    try:
        unevaluated = parse_expr(
            python, local_dict=dict(names), transformations=standard_transformations, evaluate=False
        )
        if _digits_bound(unevaluated) > _MAX_RESULT_DIGITS:
            raise _Unsupported(latex)
        return parse_expr(python, local_dict=dict(names), transformations=standard_transformations)
    except (SyntaxError, TokenError, TypeError, ValueError, ZeroDivisionError, AttributeError, RecursionError) as error:
        raise _Unsupported(latex) from error  # TokenError: unbalanced brackets reach Python's tokenizer


def _sympy_equal(a: str, b: str) -> bool:
    """Numeric (relative 1e-9) or symbolic (simplify(a - b) == 0) equality; False whenever sympy cannot say."""
    try:
        left, right = _to_sympy(a), _to_sympy(b)
    except _Unsupported:
        return False
    import sympy

    try:
        if left.has(sympy.nan, sympy.zoo) or right.has(sympy.nan, sympy.zoo):
            return False
        if left.has(sympy.oo) or right.has(sympy.oo):
            return bool(left == right)
        if left.free_symbols or right.free_symbols:
            return bool(sympy.simplify(left - right) == 0)
        difference = abs(sympy.N(left - right, 30))
        scale = max(sympy.Integer(1), abs(sympy.N(right, 30)))
        return bool(difference <= sympy.Float("1e-9") * scale)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, RecursionError):
        return False


def _split_top_level(s: str) -> list[str]:
    """Split at commas outside (), [] and {}."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(s):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return parts


@dataclass(frozen=True)
class _Group:
    """A tuple, interval or set answer: its brackets and its elements."""

    opening: str
    items: tuple[str, ...]
    closing: str

    @property
    def unordered(self) -> bool:
        return self.opening == "\\{"


def _as_group(s: str) -> _Group | None:
    """(1,2), [0,1), (-\\infty,3] or \\{1,2\\} as a group of at least two elements; None otherwise."""
    if s.startswith("\\{") and s.endswith("\\}"):
        items = _split_top_level(s[2:-2])
        return _Group("\\{", tuple(items), "\\}") if len(items) >= 2 else None
    if len(s) < 2 or s[0] not in "([" or s[-1] not in ")]":
        return None
    depth = 0
    for i, char in enumerate(s):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if depth == 0 and i < len(s) - 1:
            return None  # "(1)+(2)": the first bracket closes before the end
    items = _split_top_level(s[1:-1])
    return _Group(s[0], tuple(items), s[-1]) if len(items) >= 2 else None


def _elements_equal(left: Sequence[str], right: Sequence[str], ordered: bool) -> bool:
    if len(left) != len(right):
        return False
    if ordered:
        return all(_atom_equal(a, b) for a, b in zip(left, right, strict=True))
    unused = list(right)
    for a in left:
        match = next((k for k, b in enumerate(unused) if _atom_equal(a, b)), None)
        if match is None:
            return False
        unused.pop(match)
    return True


def _atom_equal(a: str, b: str) -> bool:
    return a == b or _sympy_equal(a, b)


def math_equivalent(predicted: str | None, gold: str) -> bool:
    """Whether a predicted MATH answer equals the gold one.

    Equal after `normalize_math_answer`, else equal in value (sympy, on whitelisted arithmetic only). Tuples and
    intervals compare element-wise with the same brackets; sets (\\{..\\}) and bare comma lists ignore order.
    None, empty and overlong predictions are never equivalent.
    """
    if predicted is None:
        return False
    left, right = normalize_math_answer(predicted), normalize_math_answer(gold)
    if not left or not right:
        return False
    if left == right:
        return True
    if len(left) > _SYMPY_MAX_CHARS or len(right) > _SYMPY_MAX_CHARS:
        return False
    left_group, right_group = _as_group(left), _as_group(right)
    if left_group or right_group:
        if left_group is None or right_group is None:
            return False
        if (left_group.opening, left_group.closing) != (right_group.opening, right_group.closing):
            return False
        return _elements_equal(left_group.items, right_group.items, ordered=not left_group.unordered)
    left_items, right_items = _split_top_level(left), _split_top_level(right)
    if len(left_items) > 1 or len(right_items) > 1:
        return _elements_equal(left_items, right_items, ordered=False)
    return _atom_equal(left, right)
