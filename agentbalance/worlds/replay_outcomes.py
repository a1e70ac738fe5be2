"""A replay world's outcomes.csv.gz read and checked (the format: docs/worlds.md#replay-world-folders).

It must never let a malformed file through: every column and cell is checked, and an error names the file, the
line, the column and the value.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from agentbalance.errors import AgentBalanceError

OUTCOME_COLUMNS = ("id", "model", "answer", "correct", "completion_tokens", "cost_usd")
OPTIONAL_OUTCOME_COLUMNS = ("latency_s", "sample", "score")
MAX_RECORDED_TOKENS = 10_000_000  # far beyond any context window; larger is a damaged or misaligned file
MAX_SAMPLE = 9_999  # samples per question and backbone are numbered 0..K-1; larger is a damaged file


def read_outcomes(path: Path) -> pd.DataFrame:
    """outcomes.csv.gz as strings; the columns and every cell checked, errors naming the line and column."""
    if not path.is_file():
        raise AgentBalanceError(f"replay outcomes file not found: {path}")
    try:
        table = pd.read_csv(path, compression="gzip", dtype=str, keep_default_na=False, na_filter=False)
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise AgentBalanceError(f"{path}: not a valid gzip file ({error})") from None
    except pd.errors.EmptyDataError:
        raise AgentBalanceError(f"{path}: empty (expected a CSV header: {','.join(OUTCOME_COLUMNS)})") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as error:
        reason = " ".join(str(error).split())  # pandas ends its messages with a newline: keep one error line
        raise AgentBalanceError(f"{path}: malformed CSV: {reason}") from None
    columns = [str(c) for c in table.columns]
    missing = [c for c in OUTCOME_COLUMNS if c not in columns]
    if missing:
        raise AgentBalanceError(f"{path}: missing column(s) {', '.join(missing)}; found: {', '.join(columns)}")
    unknown = [c for c in columns if c not in OUTCOME_COLUMNS + OPTIONAL_OUTCOME_COLUMNS]
    if unknown:
        known = ", ".join(OUTCOME_COLUMNS + OPTIONAL_OUTCOME_COLUMNS)
        raise AgentBalanceError(f"{path}: unknown column(s) {', '.join(unknown)}; known: {known}")
    if table.empty:
        raise AgentBalanceError(f"{path}: no outcome rows")

    def fail(mask: pd.Series | np.ndarray, column: str, expected: str) -> None:
        bad = np.flatnonzero(np.asarray(mask))
        if bad.size:
            row = int(bad[0])
            value = table[column].iloc[row]
            raise AgentBalanceError(f"{path}: line {row + 2}, column {column}: expected {expected}, got {value!r}")

    def integers(column: str, maximum: int) -> pd.Series:
        values = pd.to_numeric(table[column], errors="coerce")
        too_large = values > maximum  # also keeps int64 from overflowing
        fail(
            values.isna() | (values < 0) | (values != values.round()) | too_large,
            column,
            f"a non-negative integer up to {maximum:,}",
        )
        return values.astype(np.int64)

    def scores() -> np.ndarray:
        """Each answer's quality: the `score` column (a judge's, in [0, 1]; empty: ungraded, NaN) where present,
        else `correct` as 1/0."""
        if "score" not in table.columns:
            return (table["correct"] == "1").to_numpy(dtype=np.float64)
        text = table["score"].str.strip()
        values = pd.to_numeric(text, errors="coerce")
        fail((text != "") & ~((values >= 0) & (values <= 1)), "score", "a number from 0 to 1, or empty (ungraded)")
        return values.to_numpy(dtype=np.float64)

    for column in ("id", "model"):
        fail(table[column].str.strip() == "", column, "a non-empty name")
    fail(~table["correct"].isin(["0", "1"]), "correct", "0 or 1")
    result = pd.DataFrame(
        {
            "id": table["id"],
            "model": table["model"],
            "answer": table["answer"].str.strip(),
            "score": scores(),
            "completion_tokens": integers("completion_tokens", MAX_RECORDED_TOKENS),
        }
    )
    if "sample" in table.columns:
        result["sample"] = integers("sample", MAX_SAMPLE)
    for column in ("cost_usd", "latency_s"):
        if column not in table.columns:
            continue
        text = table[column].str.strip()
        values = pd.to_numeric(text.where(text != "", None), errors="coerce")
        # inf/nan would turn every sum of costs or latencies into inf/nan: a damaged file, not a measurement
        fail((text != "") & ~(np.isfinite(values) & (values >= 0)), column, "a finite non-negative number or empty")
        result[column] = values.astype(np.float64)
    result.attrs["judged"] = "score" in table.columns  # a judge's scores: open-ended questions if no answers
    return result


def number_samples(outcomes: pd.DataFrame, pair: np.ndarray, pairs: int, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Each row's sample (0 without a `sample` column) and the number of samples of each (question, model)
    pair, checked: one row per (question, model, sample), a pair's samples numbered 0..K-1 without gaps."""
    numbered = "sample" in outcomes.columns
    sample = outcomes["sample"].to_numpy() if numbered else np.zeros(len(pair), dtype=np.int64)
    key = pair * (int(sample.max()) + 1) + sample
    seen, first = np.unique(key, return_index=True)
    if len(seen) != len(key):
        row = int(np.setdiff1d(np.arange(len(key)), first)[0])
        which = f" (sample {sample[row]})" if numbered else ""
        raise AgentBalanceError(
            f"{path}: line {row + 2}: a second outcome for question {outcomes['id'].iloc[row]!r} "
            f"and model {outcomes['model'].iloc[row]!r}{which}"
        )
    counts = np.bincount(pair, minlength=pairs)
    highest = np.full(pairs, -1, dtype=np.int64)
    np.maximum.at(highest, pair, sample)
    gapped = np.flatnonzero(counts != highest + 1)  # no repeats, so K rows numbered up to K-1 are 0..K-1
    if gapped.size:
        rows = np.flatnonzero(pair == gapped[0])
        row = int(rows[np.argmax(sample[rows])])
        missing = min(set(range(int(sample[row]))) - set(sample[rows].tolist()))
        raise AgentBalanceError(
            f"{path}: line {row + 2}, column sample: question {outcomes['id'].iloc[row]!r} and model "
            f"{outcomes['model'].iloc[row]!r} have sample {sample[row]} but no sample {missing} "
            "(the samples of a question and model are numbered 0, 1, ... without gaps)"
        )
    return sample, counts
