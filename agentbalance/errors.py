"""The one exception type for errors a user can cause (bad file, bad flag, infeasible budget).

It must never wrap programming errors: those stay ordinary exceptions with tracebacks.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError


class AgentBalanceError(Exception):
    """A user-facing error whose message says what is wrong and where; the CLI prints it and exits 2."""


def describe_validation_error(
    error: ValidationError, where: str, entries: object = (), section: str | None = None
) -> str:
    """Turn a pydantic error into lines naming the file, the entry and the field.

    `entries` are the raw list items, so an entry can be named by its `name` key when it has one; with
    `section`, only problems inside that list name them (a document's other lists are indexed apart).
    Anything but a list or tuple (the user's malformed document) names no entry.
    """
    items: Sequence[object] = entries if isinstance(entries, list | tuple) else ()
    lines = []
    for problem in error.errors():
        location = list(problem["loc"])
        label = ".".join(str(part) for part in location) or "(top level)"
        in_section = section is None or (bool(location) and location[0] == section)
        if in_section and len(location) >= 2 and isinstance(location[1], int) and location[1] < len(items):
            raw = items[location[1]]
            name = raw.get("name") if isinstance(raw, dict) else None
            entry = f"entry {location[1]}" + (f" ({name!r})" if isinstance(name, str) else "")
            field = ".".join(str(part) for part in location[2:]) or "(the entry itself)"
            label = f"{location[0]} {entry}, field {field}"
        lines.append(f"{where}: {label}: {problem['msg']}")
    return "\n".join(lines)


def require_unique_names(names: Sequence[str], source: str, section: str) -> None:
    """Reject a repeated name, naming the file, the list (`section`) and both entries."""
    first_index: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first_index:
            raise AgentBalanceError(
                f"{source}: {section} entry {index}: duplicate name {name!r} (first used by entry {first_index[name]})"
            )
        first_index[name] = index
