"""`agentbalance curve`: sweep every method's knob on one or several seeds, measure on test, summarise, plot.

The base MAS (the metrics' B_max) and the single-LLM points (every backbone alone: the gains' reference)
are measured on every seed, requested or not; summary rows and plot lines are for the requested methods, then
for the other methods whose points the folder already holds on every seed (a rerun with fewer methods keeps them).

A unit is one method (or the base MAS) on one seed: the grain an executor hands out (`executors.py`).
A unit depends on its arguments only, so `--executor ray` gives the numbers of the local loop.

Layout. One seed (`--seed N`): the folder holds curve.csv, summary.csv, curve-tok.png, curve-lat.png and
timings.csv. Several seeds (`--seeds 0,1,2`): one such folder per seed (seed-0/, ...) without timings, and at
the top summary.csv with every seed's rows plus each method's mean, min and max, and timings.csv of all units.

Resumable: each finished point (local executor) or unit (Ray) is written to its seed's curve.csv at once,
so a killed sweep rerun with the same command skips what finished. A manifest (curve.json) ties a folder to
one configuration; a rerun with another one is refused (a multi-seed sweep may gain seeds).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.curve_files import (
    AXES,
    SEED_STATISTICS,
    CurveRow,
    UnitTiming,
    claim_folder,
    read_curve,
    read_timings,
    write_curve,
    write_summary,
    write_timings,
)
from agentbalance.evaluation.methods import load_method
from agentbalance.evaluation.metrics import SUMMARY_COLUMNS, summary_row
from agentbalance.executors import Executor, ExecutorSpec
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.mas import MAS
from agentbalance.measuring import measure
from agentbalance.train.build import one_torch_thread, refuse_ungradable
from agentbalance.train.config import TrainConfig
from agentbalance.worlds import judge_of

BASE_METHOD = "base"  # the row of the base MAS: the metrics' B_max and p_base
REFERENCE_METHOD = "single"  # its rows, recorded even when not requested, are the gains' reference frontier

SEED_REDUCERS = {"mean": np.mean, "min": np.min, "max": np.max}  # one per SEED_STATISTICS name
OnPoint = Callable[[int, CurveRow, bool], None]  # the seed, a point, and whether it was resumed


@dataclass(frozen=True)
class Sweep:
    """One sweep as its units need it: picklable, so a Ray worker redoes its part from this alone."""

    spec: ExperimentSpec  # each unit replaces its seed
    train: TrainConfig
    methods: tuple[str, ...]
    points: int

    def unit_methods(self) -> list[str]:
        """The base MAS, the requested methods, then the gains' reference unless requested: a unit each."""
        return list(dict.fromkeys([BASE_METHOD, *self.methods, REFERENCE_METHOD]))

    def manifest(self, seeds: Sequence[int] | None) -> dict[str, object]:
        """What ties a folder to this sweep: the options that change its numbers (one seed, or the seeds)."""
        spec = self.spec
        found: dict[str, object] = {
            "world": spec.world,
            "catalog": spec.catalog,
            "roles": spec.roles,
            "sizes": list(spec.sizes),
            "seed": spec.seed,
            "epochs": self.train.epochs,
            "points": self.points,
            "task": spec.task,
            "data": spec.data,
            "limit": spec.limit,
        }
        if self.train.menu_guard:  # only when on: folders of sweeps without it stay as they were
            found["menu_guard"] = True
        if seeds is not None:
            del found["seed"]
            found["seeds"] = list(seeds)
        return found

    def on_seed(self, seed: int) -> Sweep:
        return dataclasses.replace(self, spec=dataclasses.replace(self.spec, seed=seed))


@dataclass(frozen=True)
class Unit:
    """One method (or the base MAS) on one seed, with its points already in that seed's curve.csv."""

    seed: int
    method: str
    done: tuple[CurveRow, ...] = ()


@dataclass(frozen=True)
class UnitResult:
    rows: list[CurveRow]  # every point of the unit in its settings' order, the resumed ones included
    measured: int  # points measured now (the others were resumed)
    seconds: float  # wall time of the unit where it ran
    judge_paid_usd: float = 0.0  # what an LLM judge's grading of its answers paid now (--judge), apart from its Tok


@dataclass
class CurveResult:
    rows: dict[int, list[CurveRow]]  # seed -> its points
    summary: list[dict[str, object]]  # summary.csv's rows
    out: Path
    seconds: float
    skipped: int  # points found finished in curve.csv
    executor: str  # where the units ran
    judge_paid_usd: float = 0.0  # what an LLM judge's grading paid in this sweep (--judge), apart from every Tok


def measure_unit(
    sweep: Sweep,
    unit: Unit,
    experiment: Experiment | None = None,
    on_row: Callable[[CurveRow, bool], None] | None = None,
    on_stage: Callable[[str], None] = lambda text: None,
) -> UnitResult:
    """Every setting of one method on one seed's test split; the points in `unit.done` are kept, not measured.

    The experiment is opened from the sweep when not given (a Ray worker); `on_row` sees each point as soon
    as it is known (the local executor writes it to curve.csv at once)."""
    started = time.perf_counter()
    with one_torch_thread():
        if experiment is None:
            experiment = open_graded(sweep.on_seed(unit.seed).spec, on_stage)
        judge = judge_of(experiment.world)
        judge_paid_before = judge.stats.paid_usd if judge is not None else 0.0
        test = experiment.splits.test
        done = {row.setting: row for row in unit.done}
        rows: list[CurveRow] = []

        def point(setting: str, systems: Callable[[], list[MAS]]) -> None:
            resumed = setting in done
            if resumed:
                rows.append(done[setting])
            else:
                evaluation = measure(experiment, systems(), test)
                rows.append(
                    CurveRow(unit.method, setting, evaluation.perf, evaluation.tok, evaluation.lat, evaluation.n)
                )
            if on_row is not None:
                on_row(rows[-1], resumed)

        if unit.method == BASE_METHOD:
            if "complete" not in done:
                on_stage("measuring the base MAS")
            point("complete", lambda: [base_mas(experiment)] * len(test))
        else:
            method = load_method(unit.method, sweep.train)
            label = unit.method if unit.method in sweep.methods else f"{unit.method} (the gains' reference)"
            for setting in method.settings(experiment, sweep.points):
                if setting not in done:
                    on_stage(f"{label}: {setting}")
                point(setting, lambda setting=setting: method.fit(experiment, setting)(test))
    measured = sum(1 for row in rows if row.setting not in done)
    judge_paid = judge.stats.paid_usd - judge_paid_before if judge is not None else 0.0
    return UnitResult(rows, measured, time.perf_counter() - started, judge_paid)


def open_graded(spec: ExperimentSpec, on_stage: Callable[[str], None]) -> Experiment:
    """The experiment of one seed, refused before any method runs when none of its training or validation
    questions can be graded (as `build` refuses it); a split graded only in part is a note through `on_stage`."""
    experiment = Experiment.open(spec, on_stage=on_stage)
    for note in refuse_ungradable(experiment):
        on_stage(note)
    return experiment


class SeedPoints:
    """One seed's points as its curve.csv holds them; every change rewrites the file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.rows = read_curve(folder / "curve.csv")

    def of(self, method: str) -> tuple[CurveRow, ...]:
        return tuple(row for row in self.rows if row.method == method)

    def record_point(self, row: CurveRow) -> None:
        self.rows = [r for r in self.rows if (r.method, r.setting) != (row.method, row.setting)] + [row]
        write_curve(self.folder / "curve.csv", self.rows)

    def record_unit(self, method: str, rows: Sequence[CurveRow]) -> None:
        """The unit's points in its settings' order, where its first point was (else at the end)."""
        first = next((i for i, r in enumerate(self.rows) if r.method == method), len(self.rows))
        before = [r for r in self.rows[:first] if r.method != method]
        after = [r for r in self.rows[first:] if r.method != method]
        self.rows = [*before, *rows, *after]
        write_curve(self.folder / "curve.csv", self.rows)

    def in_order(self, methods: Sequence[str]) -> list[CurveRow]:
        """The sweep's units in their order (whatever order they finished in), then other methods' points."""
        rank = {name: i for i, name in enumerate(methods)}
        return sorted(self.rows, key=lambda row: rank.get(row.method, len(rank)))


def run_curve(
    sweep: Sweep,
    out: Path,
    seeds: Sequence[int] | None = None,
    executor: ExecutorSpec | None = None,
    on_point: OnPoint = lambda seed, row, resumed: None,
    on_stage: Callable[[str], None] = lambda text: None,
    on_unit: Callable[[int, int], None] = lambda finished, total: None,
) -> CurveResult:
    """Measure every (method, setting) of every seed on its test split, then write summaries and plots.

    `seeds` None: one seed (the spec's), in `out` itself; else one folder per seed under `out`.
    `on_unit(finished, total)` counts units across workers (a progress bar)."""
    started = time.perf_counter()
    executor = executor or ExecutorSpec()
    if seeds is not None and not seeds:
        raise AgentBalanceError("--seeds names no seed: give a comma-separated list of integers")
    seed_list = list(dict.fromkeys(seeds)) if seeds is not None else [sweep.spec.seed]
    with executor.open() as running:  # first: a cluster that cannot be reached fails before any file is written
        result = _sweep(sweep, out, seeds, seed_list, running, executor.in_process, on_point, on_stage, on_unit)
    result.seconds = time.perf_counter() - started
    return result


def _sweep(
    sweep: Sweep,
    out: Path,
    seeds: Sequence[int] | None,
    seed_list: list[int],
    running: Executor,
    in_process: bool,
    on_point: OnPoint,
    on_stage: Callable[[str], None],
    on_unit: Callable[[int, int], None],
) -> CurveResult:
    claim_folder(out, sweep.manifest(seeds))
    folders = {seed: out / f"seed-{seed}" if seeds is not None else out for seed in seed_list}
    if seeds is not None:
        for seed in seed_list:
            claim_folder(folders[seed], sweep.on_seed(seed).manifest(None))
    points = {seed: SeedPoints(folders[seed]) for seed in seed_list}
    timings = {(t.seed, t.method): t for t in read_timings(out / "timings.csv")}
    units = [Unit(seed, name, points[seed].of(name)) for name in sweep.unit_methods() for seed in seed_list]
    todo = [unit for unit in units if not _finished(unit, timings)]
    skipped = sum(len(unit.done) for unit in units)
    for unit in units:
        if _finished(unit, timings):
            for row in unit.done:
                on_point(unit.seed, row, True)
    on_unit(len(units) - len(todo), len(units))

    def record_unit(unit: Unit, result: UnitResult) -> None:
        points[unit.seed].record_unit(unit.method, result.rows)
        timings[(unit.seed, unit.method)] = UnitTiming(
            unit.seed, unit.method, len(result.rows), result.measured, result.seconds
        )
        ordered = [timings[(u.seed, u.method)] for u in units if (u.seed, u.method) in timings]
        write_timings(out / "timings.csv", ordered)

    function = _local_unit(sweep, points, on_point, on_stage) if in_process else functools.partial(_remote_unit, sweep)
    judge_paid = 0.0
    for finished, (index, result) in enumerate(running.map(function, todo), start=len(units) - len(todo) + 1):
        unit = todo[index]
        if not in_process:
            for row in result.rows:
                on_point(unit.seed, row, row in unit.done)
        record_unit(unit, result)
        judge_paid += result.judge_paid_usd
        on_unit(finished, len(units))
    rows = {seed: points[seed].in_order(sweep.unit_methods()) for seed in seed_list}
    shown = shown_methods(sweep.methods, rows)
    summaries = {seed: summarise_curve(rows[seed], shown) for seed in seed_list}
    from agentbalance.evaluation.curve_plot import plot_curves

    for seed in seed_list:
        write_curve(folders[seed] / "curve.csv", rows[seed])
        write_summary(folders[seed] / "summary.csv", summaries[seed])
        base_row = next(r for r in rows[seed] if r.method == BASE_METHOD)
        title = sweep.spec.world if seeds is None else f"{sweep.spec.world}, seed {seed}"
        for axis in AXES:
            plot_curves(rows[seed], shown, base_row, axis, folders[seed] / f"curve-{axis}.png", title=title)
    summary = summaries[seed_list[0]] if seeds is None else seed_summary(summaries, shown)
    if seeds is not None:
        write_summary(out / "summary.csv", summary)
    return CurveResult(rows, summary, out, 0.0, skipped, running.description(), judge_paid)


def shown_methods(requested: Sequence[str], rows: dict[int, list[CurveRow]]) -> list[str]:
    """The methods of the summary and plots: those requested, then any other whose points every seed's folder
    holds from an earlier run (the base MAS and the gains' reference are shown only when requested)."""
    held = [{row.method for row in seed_rows} for seed_rows in rows.values()]
    earlier = [
        method
        for method in dict.fromkeys(row.method for seed_rows in rows.values() for row in seed_rows)
        if method not in requested and method not in (BASE_METHOD, REFERENCE_METHOD) and all(method in h for h in held)
    ]
    return [*requested, *earlier]


def _finished(unit: Unit, timings: dict[tuple[int, str], UnitTiming]) -> bool:
    """A unit with a timing row whose points are all in curve.csv: nothing of it is left to do."""
    timing = timings.get((unit.seed, unit.method))
    return timing is not None and timing.points == len(unit.done) > 0


def _local_unit(
    sweep: Sweep, points: dict[int, SeedPoints], on_point: OnPoint, on_stage: Callable[[str], None]
) -> Callable[[Unit], UnitResult]:
    """A unit in this process: each seed's experiment opened once for all its units, each point written as
    soon as it is measured (so a killed local sweep loses at most the point being measured)."""
    experiments: dict[int, Experiment] = {}

    def run(unit: Unit) -> UnitResult:
        if unit.seed not in experiments:
            experiments[unit.seed] = open_graded(sweep.on_seed(unit.seed).spec, on_stage)

        def on_row(row: CurveRow, resumed: bool) -> None:
            if not resumed:
                points[unit.seed].record_point(row)
            on_point(unit.seed, row, resumed)

        return measure_unit(sweep, unit, experiments[unit.seed], on_row, on_stage)

    return run


def _remote_unit(sweep: Sweep, unit: Unit) -> UnitResult:
    """A unit in a Ray worker: it opens its own experiment (the caches on disk make that quick)."""
    return measure_unit(sweep, unit)


def summarise_curve(rows: Sequence[CurveRow], methods: Sequence[str]) -> list[dict[str, object]]:
    """One summary row per method: P@T1..4, AUC_tok, P@L1..4, AUC_lat against the base MAS, and
    gain_log_tok, gain_log_lat against the single-LLM rows (metrics.py); each curve from the method's
    points that count on its axis (`CurveRow.counts_on`)."""
    base = next((r for r in rows if r.method == BASE_METHOD), None)
    if base is None:
        raise AgentBalanceError("the sweep has no base MAS row; the metrics need it")
    single_points = [r.point for r in rows if r.method == REFERENCE_METHOD]
    if not single_points:
        raise AgentBalanceError(f"the sweep has no {REFERENCE_METHOD!r} rows; the gain metrics need them as reference")
    summary = []
    for name in methods:
        tok_points, lat_points = ([r.point for r in rows if r.method == name and r.counts_on(axis)] for axis in AXES)
        summary.append({"method": name, **summary_row(tok_points, lat_points, base.point, single_points)})
    return summary


def seed_summary(summaries: dict[int, list[dict[str, object]]], methods: Sequence[str]) -> list[dict[str, object]]:
    """A multi-seed summary: per method, one row per seed, then the mean, min and max over the seeds."""
    table: list[dict[str, object]] = []
    for name in methods:
        per_seed = {seed: next(r for r in rows if r["method"] == name) for seed, rows in summaries.items()}
        for seed, row in per_seed.items():
            table.append({"method": name, "seed": str(seed), **{c: row[c] for c in SUMMARY_COLUMNS}})
        values = {c: np.array([float(row[c]) for row in per_seed.values()]) for c in SUMMARY_COLUMNS}  # type: ignore[arg-type]
        for statistic in SEED_STATISTICS:
            reduce = SEED_REDUCERS[statistic]
            table.append({"method": name, "seed": statistic, **{c: float(reduce(v)) for c, v in values.items()}})
    return table
