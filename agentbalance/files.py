"""Reading the user's data files (YAML, JSONL) with errors that name the file and the line.

Must never let a parser exception or an OS error reach the user as a traceback.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentbalance.errors import AgentBalanceError, describe_validation_error


def read_text(path: Path, what: str) -> str:
    """A UTF-8 text file's content (gunzipped when the name ends in .gz); `what` names it in errors ("catalog")."""
    try:
        if path.name.endswith(".gz") and path.is_file():
            return gzip.decompress(path.read_bytes()).decode("utf-8")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AgentBalanceError(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise AgentBalanceError(f"{what} path is a directory, not a file: {path}") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as error:  # gzip.BadGzipFile is an OSError
        raise AgentBalanceError(f"cannot read {what} file {path}: {error}") from None


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """Parse a YAML file whose top level must be a mapping; `what` names it in errors ("catalog")."""
    path = Path(path)
    text = read_text(path, what)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise AgentBalanceError(f"{path}:{at}: malformed YAML: {problem}") from None
    except RecursionError:  # PyYAML composes nested nodes recursively
        raise AgentBalanceError(f"{path}: malformed YAML: nested too deeply to be a {what} file") from None
    if not isinstance(data, dict):
        found = "an empty file" if data is None else f"a {type(data).__name__}"
        raise AgentBalanceError(f"{path}: a {what} file must be a YAML mapping at top level, found {found}")
    return data


class _NotJSON(ValueError):
    """A Python extension of JSON (NaN, Infinity) that the JSON standard, and so our files, do not allow."""


def _reject_constant(name: str) -> Any:
    raise _NotJSON(name)


def parse_json(text: str, where: str, line: int | None = None) -> Any:
    """Parse user-provided JSON strictly; every failure is an AgentBalanceError naming `where` and the position.

    `line`: the line number of `text` in its file (one JSONL line); else positions are within `text`.
    Rejected besides malformed text: NaN / Infinity (not JSON; Python's reader would turn them into floats
    that poison a sum), integers too long for Python to read, and nesting too deep to parse.
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        at = f"line {line if line is not None else error.lineno}, column {error.colno}"
        raise AgentBalanceError(f"{where}: {at}: malformed JSON: {error.msg}") from None
    except _NotJSON as error:
        at = f": line {line}" if line is not None else ""
        raise AgentBalanceError(f"{where}{at}: {error} is not valid JSON (write null, a number or a string)") from None
    except ValueError as error:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        at = f": line {line}" if line is not None else ""
        raise AgentBalanceError(f"{where}{at}: unreadable JSON: {error}") from None
    except RecursionError:
        at = f": line {line}" if line is not None else ""
        raise AgentBalanceError(f"{where}{at}: malformed JSON: nested too deeply") from None


Schema = TypeVar("Schema", bound=BaseModel)


def load_validated(path: str | Path, what: str, schema: type[Schema], list_key: str) -> Schema:
    """Read a YAML file and validate it against `schema`; errors name the file, the entry and the field.

    `list_key` is the top-level list whose entries are named in errors by their `name` key.
    """
    raw = read_yaml_mapping(path, what)
    try:
        return schema.model_validate(raw)
    except ValidationError as error:
        raise AgentBalanceError(describe_validation_error(error, str(path), raw.get(list_key), list_key)) from None


def read_jsonl_objects(path: str | Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    """Parse a JSONL file whose lines are JSON objects; returns (line number, object), blank lines skipped.

    Errors name the file and the line, so a user can fix a hand-written file.
    """
    path = Path(path)
    text = read_text(path, what)
    objects = []
    # split on "\n" only, not splitlines(): JSON strings may contain U+2028 and other line separators
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        value = parse_json(line, str(path), line=number)
        if not isinstance(value, dict):
            raise AgentBalanceError(f"{path}: line {number}: expected a JSON object, found {type(value).__name__}")
        objects.append((number, value))
    return objects


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write to a temporary name, flush to disk, then rename: a reader (or a rerun after a kill) sees
    the old file or the new one, never a torn one."""
    temporary = path.with_name(path.name + ".tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(temporary, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(path)
    except OSError as error:
        raise AgentBalanceError(f"cannot write {path}: {error}") from None
