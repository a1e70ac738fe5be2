"""The files of a `curve` sweep folder: points (curve.csv), metrics (summary.csv), unit timings (timings.csv)
and the manifest (curve.json) that ties a folder to one configuration.

Every file is rewritten whole to a temporary name, then renamed, so a killed sweep leaves either the old
or the new content, never half of it. Reading a damaged file is an error that names it, never a traceback.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.metrics import SUMMARY_COLUMNS, Point
from agentbalance.files import atomic_write

CURVE_COLUMNS = ("method", "setting", "perf", "tok", "lat", "n")
TIMING_COLUMNS = ("seed", "method", "points", "measured", "seconds")
SEED_STATISTICS = ("mean", "min", "max")  # the rows after a method's per-seed rows in a multi-seed summary
AXES = ("tok", "lat")  # a setting "tok:..." or "lat:..." is a point of that axis's curve only


@dataclass(frozen=True)
class CurveRow:
    method: str
    setting: str
    perf: float  # in [0, 1]
    tok: float  # USD per 100 queries
    lat: float  # seconds per query
    n: int

    @property
    def point(self) -> Point:
        return Point(self.perf, self.tok, self.lat)

    def counts_on(self, axis: str) -> bool:
        """Whether this point belongs to the Tok (axis "tok") or Lat ("lat") curve: every point does, but
        one whose setting names an axis ("tok:scale=0.25": built for a Tok budget with Lat free) belongs to
        that axis's curve only."""
        named = self.setting.split(":", 1)[0] if ":" in self.setting else None
        return named not in AXES or named == axis


@dataclass(frozen=True)
class UnitTiming:
    """How long one finished unit (a method on one seed) took where it ran: its `points`, of them `measured`
    then (a resumed point costs nothing). A unit whose timing row matches its points in curve.csv is
    finished: a rerun skips it without opening its experiment."""

    seed: int
    method: str
    points: int
    measured: int
    seconds: float


def read_curve(path: Path) -> list[CurveRow]:
    """The finished points of an earlier run of the same sweep (none if the file does not exist)."""
    reader = _reader(path, CURVE_COLUMNS, "curve")
    if reader is None:
        return []
    try:
        return [
            CurveRow(r["method"], r["setting"], float(r["perf"]), float(r["tok"]), float(r["lat"]), int(r["n"]))
            for r in reader
        ]
    except (ValueError, KeyError, TypeError) as error:
        raise AgentBalanceError(f"{path}: unreadable curve file ({error}); remove it to start the sweep over") from None


def write_curve(path: Path, rows: Sequence[CurveRow]) -> None:
    _write(path, CURVE_COLUMNS, [asdict(row) for row in rows])


def read_timings(path: Path) -> list[UnitTiming]:
    reader = _reader(path, TIMING_COLUMNS, "timings")
    if reader is None:
        return []
    try:
        return [
            UnitTiming(int(r["seed"]), r["method"], int(r["points"]), int(r["measured"]), float(r["seconds"]))
            for r in reader
        ]
    except (ValueError, KeyError, TypeError) as error:
        raise AgentBalanceError(
            f"{path}: unreadable timings file ({error}); remove it to check every unit again"
        ) from None


def write_timings(path: Path, timings: Sequence[UnitTiming]) -> None:
    rows = [{**asdict(t), "seconds": f"{t.seconds:.2f}"} for t in timings]
    _write(path, TIMING_COLUMNS, rows)


def write_summary(path: Path, summary: Sequence[dict[str, object]]) -> None:
    """Metrics only: `method` (and `seed` in a multi-seed sweep), then SUMMARY_COLUMNS to four decimals."""
    keys = ("method", "seed") if summary and "seed" in summary[0] else ("method",)
    rows = [{k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()} for row in summary]
    _write(path, (*keys, *SUMMARY_COLUMNS), rows)


def read_summary(path: Path) -> list[dict[str, object]]:
    """A summary.csv as rows of floats: `method`, in a multi-seed sweep `seed` ("0", ..., "mean", "min", "max")."""
    text = _text(path, "summary")
    reader = csv.DictReader(io.StringIO(text))
    fields = tuple(reader.fieldnames or ())
    if fields not in (("method", *SUMMARY_COLUMNS), ("method", "seed", *SUMMARY_COLUMNS)):
        raise AgentBalanceError(f"{path}: not a summary file (columns {list(fields)})")
    try:
        return [
            {key: (value if key in ("method", "seed") else float(value)) for key, value in row.items()}
            for row in reader
        ]
    except (ValueError, TypeError) as error:
        raise AgentBalanceError(f"{path}: unreadable summary file ({error})") from None


def claim_folder(out: Path, manifest: dict[str, object]) -> None:
    """Create the output folder, or check that it holds a sweep of this very configuration."""
    path = out / "curve.json"
    if path.is_file():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise AgentBalanceError(f"{path}: unreadable sweep manifest ({error})") from None
        if not isinstance(found, dict):
            raise AgentBalanceError(f"{path}: not a sweep manifest (a JSON object)")
        if ("seeds" in found) != ("seeds" in manifest):
            held, use = ("several seeds", "--seeds") if "seeds" in found else ("one seed", "--seed")
            raise AgentBalanceError(f"{out} holds a sweep of {held}: continue it with {use}, or use another --out")
        if _without_seeds(found) != _without_seeds(manifest):
            changed = sorted(k for k in set(found) | set(manifest) if found.get(k) != manifest.get(k))
            raise AgentBalanceError(
                f"{out} holds a sweep with another configuration (differs in {', '.join(changed)}); "
                "use another --out or the same options"
            )
        if found == manifest:
            return
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise AgentBalanceError(f"cannot create the output folder {out}: {error}") from None
    atomic_write(path, json.dumps(manifest, indent=2))


def _without_seeds(manifest: dict[str, object]) -> dict[str, object]:
    """A multi-seed sweep may gain seeds (`--seeds 0,1` continued with `--seeds 0,1,2`): each seed's own
    folder holds its points, checked by its own manifest."""
    return {k: v for k, v in manifest.items() if k != "seeds"}


def _text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AgentBalanceError(f"{what} file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise AgentBalanceError(f"{path}: unreadable {what} file ({error})") from None


def _reader(path: Path, columns: tuple[str, ...], what: str) -> csv.DictReader[str] | None:
    """A reader over a sweep file with exactly `columns`, or None when there is no such file yet."""
    if not path.is_file():
        return None
    reader = csv.DictReader(io.StringIO(_text(path, what)))
    if tuple(reader.fieldnames or ()) != columns:
        raise AgentBalanceError(f"{path}: not a {what} file (columns {reader.fieldnames}, expected {columns})")
    return reader


def _write(path: Path, columns: Sequence[str], rows: Sequence[dict[str, object]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, buffer.getvalue())
