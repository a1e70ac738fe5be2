"""`agentbalance curve`: the files a user reads, resuming after an interruption, and the summary rule."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.curve import summarise_curve
from agentbalance.evaluation.curve_files import CurveRow, read_curve, write_curve
from agentbalance.evaluation.methods import parse_methods
from agentbalance.evaluation.metrics import GAIN_COLUMNS, SUMMARY_COLUMNS
from tests.conftest import SEEDS_SWEEP
from tests.test_cli_build import agentbalance, one_error_line

pytestmark = pytest.mark.slow  # builds, trains or sweeps: left out of `make test-fast`

SMALL = ["--train", "24", "--val", "12", "--test", "16", "--epochs", "1"]
CATALOG_SIZE = 14  # backbones of the simulator's default catalog, 6 of them kept by the Pareto filter


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


SWEEP = (*SEEDS_SWEEP, "--seed", "1")  # the one-seed sweep of the `seeds_sweep` fixture: 2 points, 8 test questions


@pytest.fixture(scope="module")
def sweep(seeds_sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the session's one-seed sweep (`curve` with agentbalance, single and star), which these tests
    may damage and resume."""
    out = tmp_path_factory.mktemp("curve") / "out"
    shutil.copytree(seeds_sweep / "single-seed-1", out)
    return out


def test_a_sweep_writes_points_summary_and_plots(sweep: Path) -> None:
    points = rows_of(sweep / "curve.csv")
    assert list(points[0]) == ["method", "setting", "perf", "tok", "lat", "n"]
    methods = [row["method"] for row in points]
    assert methods.count("base") == 1 and methods.count("agentbalance") == 4 and methods.count("star") >= 2
    assert sum(row["setting"].startswith("tok:") for row in points) == 2  # agentbalance: --points per axis
    assert methods.count("single") == CATALOG_SIZE  # every backbone alone, not only the Pareto-kept ones
    for row in points:
        assert 0 <= float(row["perf"]) <= 1 and float(row["tok"]) > 0 and float(row["lat"]) > 0
        assert int(row["n"]) == 8
    summary = rows_of(sweep / "summary.csv")
    assert [row["method"] for row in summary] == ["agentbalance", "single", "star"]
    assert list(summary[0]) == ["method", *SUMMARY_COLUMNS]
    assert all(math.isfinite(float(row[c])) for row in summary for c in SUMMARY_COLUMNS)
    assert list(summary[0])[-2:] == list(GAIN_COLUMNS)
    single = next(row for row in summary if row["method"] == "single")
    assert float(single["gain_log_tok"]) == 0 and float(single["gain_log_lat"]) == 0  # the reference itself
    for name in ("curve-tok.png", "curve-lat.png"):
        assert (sweep / name).stat().st_size > 10_000


def test_a_rerun_resumes_and_finishes_with_the_same_points(sweep: Path, tmp_path: Path) -> None:
    before = rows_of(sweep / "curve.csv")
    kept = [row_of(r) for r in before[:-4]]
    write_curve(sweep / "curve.csv", kept)  # as if the sweep had been killed four points before the end
    done = agentbalance(*SWEEP, "--out", str(sweep), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{len(before) - 4} points resumed" in " ".join(done.stdout.split())  # the base MAS's among them
    assert rows_of(sweep / "curve.csv") == before


def test_a_rerun_with_fewer_methods_keeps_the_others_in_the_summary(sweep: Path, tmp_path: Path) -> None:
    """The folder's points of methods not asked again are results too: summary.csv and the plots keep them
    (after the methods asked), rather than a rerun of one method erasing the rest."""
    out = tmp_path / "out"
    shutil.copytree(sweep, out)
    star_only = [*SWEEP[:2], "star", *SWEEP[3:]]  # `--methods star`, the sweep's other options
    done = agentbalance(*star_only, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [row["method"] for row in rows_of(out / "summary.csv")] == ["star", "agentbalance"]
    assert rows_of(out / "summary.csv")[1] == rows_of(sweep / "summary.csv")[0]  # agentbalance's, unchanged


def test_the_single_llm_reference_is_measured_even_when_not_requested(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = agentbalance("curve", "--methods", "star", "--points", "3", *SMALL, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    points = rows_of(out / "curve.csv")
    assert [row["method"] for row in points].count("single") == CATALOG_SIZE
    (star,) = rows_of(out / "summary.csv")  # a summary row for the requested method only
    assert star["method"] == "star" and list(star)[-2:] == list(GAIN_COLUMNS)
    assert all(math.isfinite(float(star[column])) for column in GAIN_COLUMNS)
    assert "gain tok" in done.stdout  # the summary table (the CSV keeps the full names)

    # a curve.csv written before the reference existed: the rerun measures the single rows it lacks
    write_curve(out / "curve.csv", [row_of(r) for r in points if r["method"] != "single"])
    rerun = agentbalance("curve", "--methods", "star", "--points", "3", *SMALL, "--out", str(out), cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(points) - CATALOG_SIZE} points resumed" in " ".join(rerun.stdout.split())  # base and star
    assert rows_of(out / "curve.csv") == points  # the same values, in the same order (the reference last)
    assert rows_of(out / "summary.csv") == [star]


def row_of(r: dict[str, str]) -> CurveRow:
    return CurveRow(r["method"], r["setting"], float(r["perf"]), float(r["tok"]), float(r["lat"]), int(r["n"]))


def test_a_folder_of_another_sweep_is_refused(sweep: Path, tmp_path: Path) -> None:
    done = agentbalance(*SEEDS_SWEEP, "--seed", "7", "--out", str(sweep), cwd=tmp_path)
    one_error_line(done, "another configuration (differs in seed)")


def test_bad_method_names_are_named() -> None:
    with pytest.raises(AgentBalanceError, match=r"unknown method.*nope"):
        parse_methods("single,nope")
    assert parse_methods("single, single ,random") == ["single", "random"]
    assert parse_methods("all,ablations") == list(dict.fromkeys([*parse_methods("all"), *parse_methods("ablations")]))
    assert parse_methods("ablations,single")[-1] == "single" and "agentbalance-no-gating" in parse_methods("ablations")
    assert "agentbalance" in parse_methods("all")


def test_a_damaged_curve_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "curve.csv"
    path.write_text("method,setting,perf\nsingle,x,0.5\n", encoding="utf-8")
    with pytest.raises(AgentBalanceError, match="not a curve file"):
        read_curve(path)


def test_the_summary_scores_each_method_against_the_base_mas() -> None:
    rows = [
        CurveRow("base", "complete", 0.8, 8.0, 80.0, 10),
        CurveRow("single", "cheap", 0.6, 1.0, 10.0, 10),
        CurveRow("single", "strong", 0.8, 4.0, 40.0, 10),
    ]
    (row,) = summarise_curve(rows, ["single"])
    assert row["P@T1"] == pytest.approx(0.6)  # T1 = 8 / 8 = 1: the cheap point
    assert row["P@T2"] == pytest.approx(0.6 + (2 - 1) / 3 * 0.2)  # between the two points
    assert row["P@T4"] == pytest.approx(0.8)
    assert row["P@L3"] == pytest.approx(0.8)
    assert row["gain_log_tok"] == 0 and row["gain_log_lat"] == 0
    with pytest.raises(AgentBalanceError, match="no base MAS"):
        summarise_curve(rows[1:], ["single"])
    with pytest.raises(AgentBalanceError, match="no 'single' rows"):
        summarise_curve([*rows[:1], CurveRow("star", "cheap", 0.7, 2.0, 20.0, 10)], ["star"])
    json.dumps(row)  # plain numbers, ready for --json


def test_a_point_built_for_one_axis_counts_on_that_axis_curve_only() -> None:
    """agentbalance's Tok curve is its Tok-budget controller's points: a point built for a Lat budget (Tok
    free, so it may be dear) must not lift or fill its Tok curve, and the reverse."""
    rows = [
        CurveRow("base", "complete", 0.8, 8.0, 80.0, 10),
        CurveRow("single", "cheap", 0.6, 1.0, 10.0, 10),
        CurveRow("ours", "tok:scale=0.125", 0.7, 1.0, 70.0, 10),
        CurveRow("ours", "lat:scale=0.125", 0.9, 7.0, 10.0, 10),
    ]
    (row,) = summarise_curve(rows, ["ours"])
    assert row["P@T4"] == pytest.approx(0.7)  # without the Lat point's 0.9 at Tok 7
    assert row["P@L1"] == pytest.approx(0.9)  # L1 = 10: the Lat point, not the Tok point at Lat 70
    assert row["P@L4"] == pytest.approx(0.9)
    assert CurveRow("single", "cheap", 0.6, 1.0, 10.0, 10).counts_on("tok")  # untagged: both curves


def test_a_sweep_of_several_seeds_writes_each_seed_and_their_mean_min_max(seeds_sweep: Path) -> None:
    out = seeds_sweep / "out"
    summary = rows_of(out / "summary.csv")
    assert list(summary[0]) == ["method", "seed", *SUMMARY_COLUMNS]  # metrics only: no timing column
    assert [(r["method"], r["seed"]) for r in summary] == [
        (method, seed) for method in ("agentbalance", "single", "star") for seed in ("0", "1", "mean", "min", "max")
    ]
    for method in ("agentbalance", "single", "star"):
        rows = {r["seed"]: r for r in summary if r["method"] == method}
        for column in SUMMARY_COLUMNS:
            values = [float(rows[seed][column]) for seed in ("0", "1")]
            assert float(rows["mean"][column]) == pytest.approx(sum(values) / 2, abs=1e-4)
            assert float(rows["min"][column]) == min(values) and float(rows["max"][column]) == max(values)
    star = {r["seed"]: r["AUC_tok"] for r in summary if r["method"] == "star"}
    assert star["0"] != star["1"]  # each seed has its own split: the seeds are not copies of one another
    # each seed's folder is exactly the one-seed sweep of that seed
    for name in ("curve.csv", "summary.csv"):
        assert (out / "seed-1" / name).read_text() == (seeds_sweep / "single-seed-1" / name).read_text()
    assert (out / "seed-0" / "curve-tok.png").stat().st_size > 10_000


def test_timings_are_written_apart_one_row_a_unit(seeds_sweep: Path) -> None:
    timings = rows_of(seeds_sweep / "out" / "timings.csv")
    assert list(timings[0]) == ["seed", "method", "points", "measured", "seconds"]
    units = {(s, m) for s in "01" for m in ("base", "agentbalance", "single", "star")}
    assert {(r["seed"], r["method"]) for r in timings} == units
    for row in timings:
        points = len([r for r in rows_of(seeds_sweep / "out" / f"seed-{row['seed']}" / "curve.csv")
                      if r["method"] == row["method"]])  # fmt: skip
        assert int(row["points"]) == int(row["measured"]) == points and float(row["seconds"]) >= 0
    assert not (seeds_sweep / "out" / "seed-0" / "timings.csv").exists()  # one table of every unit, at the top


def test_a_sweep_of_several_seeds_resumes_and_gains_seeds(seeds_sweep: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(seeds_sweep / "out", out)
    before = {name: (out / name).read_text() for name in ("summary.csv", "seed-0/curve.csv", "seed-1/curve.csv")}
    kept = [row_of(r) for r in rows_of(out / "seed-1" / "curve.csv")[:-2]]
    write_curve(out / "seed-1" / "curve.csv", kept)  # as if killed two points before the end of seed 1
    done = agentbalance(*SEEDS_SWEEP, "--seeds", "0,1", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    measured = [line for line in done.stdout.splitlines() if line.startswith("seed 1: measured")]
    assert len(measured) == 2, done.stdout
    assert {name: (out / name).read_text() for name in before} == before
    timings = {(r["seed"], r["method"]): r for r in rows_of(out / "timings.csv")}
    assert timings[("1", "star")]["measured"] == "2" and timings[("0", "star")]["measured"] != "2"

    more = agentbalance(*SEEDS_SWEEP, "--seeds", "0,1,2", "--out", str(out), cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert not any(line.startswith(("seed 0: measured", "seed 1: measured")) for line in more.stdout.splitlines())
    assert sorted({r["seed"] for r in rows_of(out / "summary.csv")}) == ["0", "1", "2", "max", "mean", "min"]


def test_one_seed_and_several_seeds_are_told_apart(seeds_sweep: Path, tmp_path: Path) -> None:
    one_error_line(
        agentbalance(*SEEDS_SWEEP, "--seeds", "0,1", "--out", str(seeds_sweep / "single-seed-1"), cwd=tmp_path),
        "holds a sweep of one seed: continue it with --seed",
    )
    one_error_line(
        agentbalance(*SEEDS_SWEEP, "--seed", "0", "--out", str(seeds_sweep / "out"), cwd=tmp_path),
        "holds a sweep of several seeds: continue it with --seeds",
    )
    one_error_line(agentbalance(*SEEDS_SWEEP, "--seed", "0", "--seeds", "0,1", cwd=tmp_path), "not both")
    one_error_line(agentbalance(*SEEDS_SWEEP, "--seeds", "0,x", cwd=tmp_path), "comma-separated integers")
    assert not list(tmp_path.iterdir())  # nothing written for a refused command


def test_the_plot_reads_perf_in_percent_on_a_log_cost_axis_and_tells_every_method_apart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every table says %, the useful Tok region is the low end, and 16 methods must be told apart in print too."""
    from dataclasses import dataclass

    from agentbalance.evaluation import curve_plot

    @dataclass
    class Point:
        method: str
        perf: float
        tok: float
        lat: float

        def counts_on(self, axis: str) -> bool:
            return True

    methods = [f"m{k}" for k in range(12)]
    rows = [
        Point(m, 0.5 + 0.02 * k + 0.1 * j, 0.01 * (j + 1) * (k + 1), 1.0 + j)
        for k, m in enumerate(methods)
        for j in range(2)
    ]
    drawn = []
    monkeypatch.setattr(curve_plot, "save_figure", lambda figure, path, dpi: drawn.append(figure))
    curve_plot.plot_curves(rows, methods, Point("base", 0.9, 5.0, 9.0), "tok", tmp_path / "curve.png")
    (axes,) = drawn[0].axes
    assert axes.get_xscale() == "log" and "%" in axes.get_ylabel()
    lines = {line.get_label(): line for line in axes.get_lines() if line.get_label() in methods}
    assert len(lines) == 12 and max(line.get_ydata().max() for line in lines.values()) > 1  # percent, not 0-1
    looks = {(line.get_marker(), line.get_linestyle(), str(line.get_color())) for line in lines.values()}
    assert len(looks) == 12
