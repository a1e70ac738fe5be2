"""Raw dataset records, each labelled with where it came from (a file and line, or a hub record), and their fields.

It must never import `datasets` at import time (it is slow and needs no network until asked), nor guess a field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_jsonl_objects

Record = tuple[str, dict[str, Any]]
"""(where, raw record): `where` names the file and line (or the hub record) in error messages."""

REASON_CHARS = 200


@dataclass(frozen=True)
class HubDataset:
    """A dataset on the Hugging Face hub: its path, config (None for the default one) and split."""

    path: str
    config: str | None
    split: str


def jsonl_records(path: Path, what: str) -> list[Record]:
    """The objects of a JSONL file, labelled "<path>: line N"; a missing file or a bad line is an error."""
    records = [(f"{path}: line {number}", record) for number, record in read_jsonl_objects(path, what)]
    if not records:
        raise AgentBalanceError(f"{path}: no {what} record in the file")
    return records


def hub_records(hub: HubDataset, task: str, needs: str) -> list[Record]:
    """Records of a hub dataset through `datasets.load_dataset`; any failure says to pass a local file instead."""
    try:
        from datasets import load_dataset

        arguments = (hub.path, hub.config) if hub.config else (hub.path,)
        dataset = load_dataset(*arguments, split=hub.split)
        records = [dict(record) for record in dataset]
    except Exception as error:  # offline, gated, renamed, missing package: every cause means "use --data"
        lines = str(error).strip().splitlines()
        reason = f"{type(error).__name__}: {lines[0] if lines else '(no message)'}"
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 3] + "..."
        raise AgentBalanceError(
            f"task {task!r} needs --data PATH ({needs}); loading {hub.path!r} from the Hugging Face hub failed: "
            f"{reason}"
        ) from None
    if not records:
        raise AgentBalanceError(f"task {task!r}: the hub dataset {hub.path!r} (split {hub.split}) has no record")
    label = f"hub dataset {hub.path}" + (f" ({hub.config})" if hub.config else "") + f", split {hub.split}"
    return [(f"{label}: record {index}", record) for index, record in enumerate(records)]


def text_field(record: Record, *keys: str, optional: bool = False) -> str | None:
    """The first of `keys` present in the record, as a string; a missing (unless optional) or non-text one is an error.

    Integers are accepted and turned into text (ids and numeric answers often are numbers).
    """
    where, raw = record
    for key in keys:
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise AgentBalanceError(f"{where}: field {key!r} must be text, found {type(value).__name__}")
        return str(value)
    if optional:
        return None
    raise AgentBalanceError(f"{where}: missing field {' or '.join(repr(k) for k in keys)}")


def required_text(record: Record, *keys: str) -> str:
    """Like `text_field`, for a field that must be present and not blank."""
    value = text_field(record, *keys)
    if value is None or not value.strip():
        raise AgentBalanceError(f"{record[0]}: field {keys[0]!r} is empty")
    return value


def text_list(record: Record, key: str, optional: bool = False) -> list[str]:
    """A list-of-strings field (choices, options, test asserts); anything else is an error naming the field."""
    where, raw = record
    value = raw.get(key)
    if value is None and optional:
        return []
    if not isinstance(value, Sequence) or isinstance(value, str) or not all(isinstance(v, str) for v in value):
        found = "nothing" if value is None else type(value).__name__
        raise AgentBalanceError(f"{where}: field {key!r} must be a list of strings, found {found}")
    return list(value)


def existing(path: Path, what: str) -> Path:
    """`path` itself when it exists; otherwise an error naming what was looked for."""
    if not path.exists():
        raise AgentBalanceError(f"{what} not found: {path}")
    return path
