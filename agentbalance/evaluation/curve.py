"""`agentbalance curve`: sweep every method's knob on one experiment, measure on test, summarise, plot.

The base MAS (the metrics' B_max) and the single-LLM points (every backbone alone: the gains' reference)
are measured in every sweep, requested or not; summary rows and plot lines are for the requested methods.

Resumable: each finished point is written to curve.csv (whole file rewritten to a temporary name, then
renamed), so a killed sweep rerun with the same command skips the finished points. A manifest
(curve.json) ties an output folder to one configuration; a rerun with another one is refused.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.measure import measure
from agentbalance.evaluation.methods import load_method
from agentbalance.evaluation.metrics import SUMMARY_COLUMNS, Point, summary_row
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.files import atomic_write
from agentbalance.train.build import one_torch_thread
from agentbalance.train.config import TrainConfig

CURVE_COLUMNS = ("method", "setting", "perf", "tok", "lat", "n")
BASE_METHOD = "base"  # the row of the base MAS: the metrics' B_max and p_base
REFERENCE_METHOD = "single"  # its rows, recorded even when not requested, are the gains' reference frontier


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


@dataclass
class CurveResult:
    rows: list[CurveRow]
    summary: list[dict[str, object]]
    out: Path
    seconds: float
    skipped: int  # points found finished in curve.csv


def run_curve(
    spec: ExperimentSpec,
    train: TrainConfig,
    methods: Sequence[str],
    points: int,
    out: Path,
    on_point: Callable[[CurveRow, bool], None] = lambda row, resumed: None,
    on_stage: Callable[[str], None] = lambda text: None,
) -> CurveResult:
    """Measure every (method, setting) on the test split, then write summary.csv and the two plots."""
    started = time.perf_counter()
    manifest = {
        "world": spec.world,
        "catalog": spec.catalog,
        "roles": spec.roles,
        "sizes": list(spec.sizes),
        "seed": spec.seed,
        "epochs": train.epochs,
        "points": points,
        "task": spec.task,
        "data": spec.data,
        "limit": spec.limit,
    }
    _claim_folder(out, manifest)
    with one_torch_thread():
        return _sweep(spec, train, methods, points, out, on_point, on_stage, started)


def _sweep(
    spec: ExperimentSpec,
    train: TrainConfig,
    methods: Sequence[str],
    points: int,
    out: Path,
    on_point: Callable[[CurveRow, bool], None],
    on_stage: Callable[[str], None],
    started: float,
) -> CurveResult:
    rows = read_curve(out / "curve.csv")
    done = {(row.method, row.setting) for row in rows}
    experiment = Experiment.open(spec, on_stage=on_stage)
    test = experiment.splits.test
    skipped = 0

    def record(row: CurveRow) -> None:
        rows.append(row)
        done.add((row.method, row.setting))
        write_curve(out / "curve.csv", rows)
        on_point(row, False)

    base = base_mas(experiment)
    if (BASE_METHOD, "complete") not in done:
        on_stage("measuring the base MAS")
        evaluation = measure(experiment, [base] * len(test), test)
        record(CurveRow(BASE_METHOD, "complete", evaluation.perf, evaluation.tok, evaluation.lat, evaluation.n))
    for name in dict.fromkeys([*methods, REFERENCE_METHOD]):  # the reference last, unless requested
        method = load_method(name, train)
        label = name if name in methods else f"{name} (the gains' reference)"
        for setting in method.settings(experiment, points):
            if (name, setting) in done:
                skipped += 1
                on_point(next(r for r in rows if (r.method, r.setting) == (name, setting)), True)
                continue
            on_stage(f"{label}: {setting}")
            masses = method.fit(experiment, setting)(test)
            evaluation = measure(experiment, masses, test)
            record(CurveRow(name, setting, evaluation.perf, evaluation.tok, evaluation.lat, evaluation.n))
    summary = summarise_curve(rows, methods)
    _write_summary(out / "summary.csv", summary)
    from agentbalance.evaluation.curve_plot import plot_curves

    base_row = next(r for r in rows if r.method == BASE_METHOD)
    for axis in ("tok", "lat"):
        plot_curves(rows, methods, base_row, axis, out / f"curve-{axis}.png", title=spec.world)
    return CurveResult(rows, summary, out, time.perf_counter() - started, skipped)


def summarise_curve(rows: Sequence[CurveRow], methods: Sequence[str]) -> list[dict[str, object]]:
    """One summary row per method: P@T1..4, AUC_tok, P@L1..4, AUC_lat against the base MAS, and
    gain_log_tok, gain_log_lat against the single-LLM rows (metrics.py)."""
    base = next((r for r in rows if r.method == BASE_METHOD), None)
    if base is None:
        raise AgentBalanceError("the sweep has no base MAS row; the metrics need it")
    single_points = [r.point for r in rows if r.method == REFERENCE_METHOD]
    if not single_points:
        raise AgentBalanceError(f"the sweep has no {REFERENCE_METHOD!r} rows; the gain metrics need them as reference")
    summary = []
    for name in methods:
        method_points = [r.point for r in rows if r.method == name]
        summary.append({"method": name, **summary_row(method_points, base.point, single_points)})
    return summary


def read_curve(path: Path) -> list[CurveRow]:
    """The finished points of an earlier run of the same sweep (none if the file does not exist)."""
    if not path.is_file():
        return []
    try:
        reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
        if tuple(reader.fieldnames or ()) != CURVE_COLUMNS:
            raise AgentBalanceError(f"{path}: not a curve file (columns {reader.fieldnames}, expected {CURVE_COLUMNS})")
        return [
            CurveRow(r["method"], r["setting"], float(r["perf"]), float(r["tok"]), float(r["lat"]), int(r["n"]))
            for r in reader
        ]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise AgentBalanceError(f"{path}: unreadable curve file ({error}); remove it to start the sweep over") from None


def write_curve(path: Path, rows: Sequence[CurveRow]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CURVE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(asdict(row))
    atomic_write(path, buffer.getvalue())


def _write_summary(path: Path, summary: Sequence[dict[str, object]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=("method", *SUMMARY_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in summary:
        writer.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()})
    atomic_write(path, buffer.getvalue())


def _claim_folder(out: Path, manifest: dict[str, object]) -> None:
    """Create the output folder, or check that it holds a sweep of this very configuration."""
    path = out / "curve.json"
    if path.is_file():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise AgentBalanceError(f"{path}: unreadable sweep manifest ({error})") from None
        if found != manifest:
            changed = sorted(k for k in set(found) | set(manifest) if found.get(k) != manifest.get(k))
            raise AgentBalanceError(
                f"{out} holds a sweep with another configuration (differs in {', '.join(changed)}); "
                "use another --out or the same options"
            )
        return
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise AgentBalanceError(f"cannot create the output folder {out}: {error}") from None
    atomic_write(path, json.dumps(manifest, indent=2))
