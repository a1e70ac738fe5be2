"""MMLU (the original headerless per-subject CSVs, or cais/mmlu) and MMLU-Pro (JSONL, or TIGER-Lab/MMLU-Pro) as queries.

It must never reorder rows or choices: ids and gold letters come straight from the source.
"""

from __future__ import annotations

import csv
import io
import string
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_text
from agentbalance.query import Query
from agentbalance.tasks.records import HubDataset, Record, existing, jsonl_records, required_text, text_list

MMLU_HUB = HubDataset("cais/mmlu", "all", "test")
MMLU_PRO_HUB = HubDataset("TIGER-Lab/MMLU-Pro", None, "test")
MMLU_COLUMNS = ("question", "A", "B", "C", "D", "answer")


# ----------------------------------------------------------------------------- MMLU


def read_mmlu(path: Path) -> list[Query]:
    """One `<subject>_test.csv` file, or a folder of them (sorted by name; a `test/` subfolder is used if present)."""
    records: list[Record] = []
    for file in _csv_files(existing(path, "MMLU data")):
        records += _csv_records(file, file.stem.removesuffix("_test"))
    return mmlu_queries(records)


def _csv_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    folder = path / "test" if (path / "test").is_dir() and not any(path.glob("*.csv")) else path
    files = sorted(folder.glob("*_test.csv")) or sorted(folder.glob("*.csv"))
    if not files:
        raise AgentBalanceError(f"{path}: no MMLU CSV file in this folder (expected <subject>_test.csv files)")
    return files


def _csv_records(file: Path, subject: str) -> list[Record]:
    """Rows question,A,B,C,D,answer as records {question, choices, answer, subject}; blank rows are skipped."""
    reader = csv.reader(io.StringIO(read_text(file, "MMLU CSV"), newline=""))
    records: list[Record] = []
    try:
        for number, row in enumerate(reader, start=1):
            if not any(cell.strip() for cell in row):
                continue
            where = f"{file}: row {number} (line {reader.line_num})"
            if len(row) != len(MMLU_COLUMNS):
                raise AgentBalanceError(
                    f"{where}: expected {len(MMLU_COLUMNS)} columns ({','.join(MMLU_COLUMNS)}), found {len(row)}"
                )
            record = {"question": row[0], "choices": row[1:5], "answer": row[5].strip(), "subject": subject}
            records.append((where, record))
    except csv.Error as error:
        raise AgentBalanceError(f"{file}: line {reader.line_num}: malformed CSV: {error}") from None
    if not records:
        raise AgentBalanceError(f"{file}: no MMLU row in the file")
    return records


def mmlu_queries(records: Sequence[Record]) -> list[Query]:
    """cais/mmlu records {question, subject, choices, answer (0-3 or a letter)} -> `mmlu-<subject>-<row>` queries.

    <row> counts from 0 within each subject, in file order: the CSVs and the hub rows number alike.
    """
    rows: Counter[str] = Counter()
    queries = []
    for record in records:
        subject = required_text(record, "subject")
        choices = text_list(record, "choices")
        queries.append(
            Query(
                id=f"mmlu-{subject}-{rows[subject]}",
                question=required_text(record, "question"),
                choices=_checked_choices(record, choices),
                answer=_gold_letter(record, len(choices)),
                domain="general",
                metadata={"subject": subject},
            )
        )
        rows[subject] += 1
    return queries


# ----------------------------------------------------------------------------- MMLU-Pro


def read_mmlu_pro(path: Path) -> list[Query]:
    """MMLU-Pro as JSONL, one {question_id, question, options, answer, answer_index, category, src?} a line."""
    return mmlu_pro_queries(jsonl_records(path, "MMLU-Pro"))


def mmlu_pro_queries(records: Sequence[Record]) -> list[Query]:
    """MMLU-Pro records -> `mmlupro-<question_id>` queries (the ids the shared mmlu-pro replay world uses)."""
    queries = []
    for record in records:
        options = text_list(record, "options")
        metadata = {key: record[1][key] for key in ("category", "src") if isinstance(record[1].get(key), str)}
        queries.append(
            Query(
                id=f"mmlupro-{required_text(record, 'question_id')}",
                question=required_text(record, "question"),
                choices=_checked_choices(record, options),
                answer=_gold_letter(record, len(options), index_key="answer_index"),
                domain="general",
                metadata=metadata,
            )
        )
    return queries


# ----------------------------------------------------------------------------- shared checks


def _checked_choices(record: Record, choices: list[str]) -> tuple[str, ...]:
    if not 2 <= len(choices) <= len(string.ascii_uppercase):
        raise AgentBalanceError(f"{record[0]}: expected 2 to 26 choices, found {len(choices)}")
    return tuple(choices)


def _gold_letter(record: Record, count: int, index_key: str | None = None) -> str:
    """The gold option letter: `answer` as a letter, or as an index (the hub's MMLU), or else `index_key`."""
    where, raw = record
    letters = string.ascii_uppercase[:count]
    answer = raw.get("answer")
    index = _as_index(answer) if _as_index(answer) is not None else _as_index(raw.get(index_key or "answer"))
    letter = answer.strip().upper() if isinstance(answer, str) else None
    if letter is None and index is not None and 0 <= index < count:
        letter = letters[index]
    if letter is None or len(letter) != 1 or letter not in letters:
        shown = answer if answer is not None else raw.get(index_key or "answer")
        raise AgentBalanceError(f"{where}: answer {shown!r} is not one of the option letters {', '.join(letters)}")
    if index is not None and letters.index(letter) != index:
        raise AgentBalanceError(f"{where}: answer {letter!r} disagrees with {index_key} {index}")
    return letter


def _as_index(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
