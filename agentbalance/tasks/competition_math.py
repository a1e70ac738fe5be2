"""MATH (Hendrycks et al.: one JSON file per problem in a folder tree) and MATH-500 (JSONL, or HuggingFaceH4/MATH-500).

It must never invent a gold answer: MATH's is the last \\boxed{} of the solution, MATH-500's its `answer` field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_text
from agentbalance.query import Query
from agentbalance.tasks.records import HubDataset, Record, existing, jsonl_records, required_text, text_field
from agentbalance.tasks.scoring import extract_boxed

MATH500_HUB = HubDataset("HuggingFaceH4/MATH-500", None, "test")
SPLIT_FOLDERS = ("train", "test")
_LEVEL = re.compile(r"^\s*(?:level\s*)?(\d+)\s*$", re.IGNORECASE)


def read_math(path: Path) -> list[Query]:
    """A MATH folder (every *.json below it, sorted by path), one MATH problem file, or a MATH-500 JSONL file."""
    path = existing(path, "MATH data")
    if path.is_dir():
        files = sorted(path.rglob("*.json"), key=lambda file: file.relative_to(path).as_posix())
        if not files:
            raise AgentBalanceError(f"{path}: no MATH problem file (*.json) in this folder")
        return math_queries([_problem_file(file) for file in files])
    if path.suffix == ".json":
        return math_queries([_problem_file(path)])
    return math_queries(jsonl_records(path, "MATH-500"))


def _problem_file(file: Path) -> Record:
    """One MATH problem {problem, level, type, solution}; its id comes from its place: <split>/<subject>/<n>.json."""
    try:
        raw = json.loads(read_text(file, "MATH problem"))
    except json.JSONDecodeError as error:
        raise AgentBalanceError(f"{file}: line {error.lineno}: malformed JSON: {error.msg}") from None
    except (ValueError, RecursionError) as error:  # a number of thousands of digits, nesting too deep
        raise AgentBalanceError(f"{file}: unreadable JSON: {str(error) or type(error).__name__}") from None
    if not isinstance(raw, dict):
        raise AgentBalanceError(f"{file}: expected a JSON object, found {type(raw).__name__}")
    return str(file), {"unique_id": "/".join(file.resolve().parts[-3:]), **raw}


def math_queries(records: Sequence[Record]) -> list[Query]:
    """MATH or MATH-500 records -> `math-<split>-<subject>-<n>` queries (from unique_id; else `math-<index>`).

    Gold: the `answer` field when there is one (MATH-500), else the last \\boxed{} of the solution (MATH).
    metadata: level (an int, None for MATH's "Level ?"), subject (MATH's `type`), the reference solution.
    """
    queries = []
    for index, record in enumerate(records):
        where, raw = record
        solution = text_field(record, "solution", optional=True)
        answer = text_field(record, "answer", optional=True)
        if answer is None or not answer.strip():
            answer = extract_boxed(solution) if solution else None
        if answer is None or not answer.strip():
            raise AgentBalanceError(f"{where}: no answer: neither an 'answer' field nor a \\boxed{{}} in the solution")
        unique_id = text_field(record, "unique_id", optional=True)
        queries.append(
            Query(
                id=_math_id(unique_id) if unique_id else f"math-{index}",
                question=required_text(record, "problem"),
                answer=answer.strip(),
                domain="math",
                metadata={
                    "level": _level(raw.get("level")),
                    "subject": text_field(record, "subject", "type", optional=True),
                    "solution": solution,
                },
            )
        )
    return queries


def _math_id(unique_id: str) -> str:
    """ "test/precalculus/807.json" (MATH-500's unique_id, or a MATH file's path) -> "math-test-precalculus-807"."""
    parts = PurePosixPath(unique_id.replace("\\", "/")).with_suffix("").parts
    keep = 3 if len(parts) >= 3 and parts[-3] in SPLIT_FOLDERS else 2
    return "math-" + "-".join(parts[-keep:])


def _level(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _LEVEL.match(value) if isinstance(value, str) else None
    return int(match.group(1)) if match else None
