"""P(B), the convexified frontier and AUC (paper Appendix D), checked against hand-computed values."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.metrics import (
    GAIN_COLUMNS,
    SUMMARY_COLUMNS,
    Point,
    auc,
    budget_points,
    frontier,
    gain_budgets,
    gain_over_single,
    in_points,
    performance_at_budgets,
    summary_row,
)


def test_a_concave_scatter_keeps_every_point_and_interpolates_linearly() -> None:
    curve = frontier([(2, 0.75), (1, 0.5), (4, 0.875)])
    assert curve.budgets == (0, 1, 2, 4)
    assert curve.perfs == (0, 0.5, 0.75, 0.875)
    assert curve.at(0.5) == pytest.approx(0.25)
    assert curve.at(3) == pytest.approx(0.8125)
    assert curve.at(5) == pytest.approx(0.875)  # flat after the last point


def test_a_point_under_the_hull_and_a_dominated_point_are_dropped() -> None:
    # (1, 0.2) lies under the chord (0, 0)-(2, 0.8), whose value at 1 is 0.4; (3, 0.7) costs more for less
    curve = frontier([(1, 0.2), (2, 0.8), (3, 0.7)])
    assert curve.budgets == (0, 2)
    assert curve.perfs == (0, 0.8)
    assert curve.at(1) == pytest.approx(0.4)
    assert curve.at(3) == pytest.approx(0.8)


def test_duplicates_count_once_and_only_the_best_perf_at_a_budget_counts() -> None:
    curve = frontier([(1, 0.5), (1, 0.5), (1, 0.3)])
    assert (curve.budgets, curve.perfs) == ((0, 1), (0, 0.5))


def test_a_point_at_budget_zero_lifts_the_anchor() -> None:
    curve = frontier([(0, 0.3), (-0.0, 0.1)])
    assert (curve.budgets, curve.perfs) == ((0,), (0.3,))
    assert curve.at(7) == pytest.approx(0.3)


def test_auc_appends_the_base_point_when_it_is_above_the_frontier() -> None:
    points = [(1, 0.5), (2, 0.75), (4, 0.875)]
    # (0,0)-(1,.5)-(2,.75)-(4,.9): 0.25 + 0.625 + 1.65 = 2.525 over a width of 4
    assert auc(points, (4, 0.9)) == pytest.approx(2.525 / 4)
    # a base point under the frontier changes nothing: (2,.75)-(4,.875) gives 1.625
    assert auc(points, (4, 0.8)) == pytest.approx(2.5 / 4)


def test_a_point_beyond_b_max_is_interpolated_at_b_max_and_truncated_for_the_area() -> None:
    points = [(1, 0.4), (8, 0.8)]
    p_at_2, p_at_4 = 0.4 + 0.4 / 7, 0.4 + 3 * 0.4 / 7
    assert performance_at_budgets(points, 4) == pytest.approx((0.2, 0.4, p_at_2, p_at_4))
    # base above P(4) = 0.5714: (0,0)-(1,.4)-(4,.6) -> 0.2 + 1.5
    assert auc(points, (4, 0.6)) == pytest.approx(1.7 / 4)
    # base below P(4): the truncated frontier itself -> 0.2 + (0.4 + 0.5714) / 2 * 3
    assert auc(points, (4, 0.5)) == pytest.approx((0.2 + (0.4 + p_at_4) * 1.5) / 4)


def test_a_single_point() -> None:
    assert performance_at_budgets([(2, 0.6)], 4) == pytest.approx((0.15, 0.3, 0.6, 0.6))
    assert auc([(2, 0.6)], (4, 0.9)) == pytest.approx((0.6 + 1.5) / 4)


def test_zero_points_give_zero_performance_and_half_the_base_area() -> None:
    assert performance_at_budgets([], 4) == (0, 0, 0, 0)
    assert auc([], (4, 0.9)) == pytest.approx(0.45)


def test_budget_points_are_eighth_quarter_half_and_all_of_b_max() -> None:
    assert budget_points(8) == (1, 2, 4, 8)


def test_summary_row_has_the_summary_columns_for_both_axes() -> None:
    method = [Point(perf=0.6, tok=2, lat=10), Point(perf=0.4, tok=1, lat=30)]
    base = Point(perf=0.9, tok=4, lat=40)
    row = summary_row(method, method, base, single_points=method)
    assert tuple(row) == SUMMARY_COLUMNS
    assert SUMMARY_COLUMNS[-2:] == GAIN_COLUMNS == ("gain_log_tok", "gain_log_lat")
    assert [row[f"P@T{k}"] for k in range(1, 5)] == pytest.approx([0.2, 0.4, 0.6, 0.6])
    assert row["AUC_tok"] == pytest.approx((0.2 + 0.5 + 1.5) / 4)  # (0,0)-(1,.4)-(2,.6)-(4,.9)
    # on latency (30, 0.4) is dominated by (10, 0.6): L = 5, 10, 20, 40
    assert [row[f"P@L{k}"] for k in range(1, 5)] == pytest.approx([0.3, 0.6, 0.6, 0.6])
    assert row["AUC_lat"] == pytest.approx((3 + 22.5) / 40)  # (0,0)-(10,.6)-(40,.9)


def test_summary_row_of_a_method_without_points_has_no_nan() -> None:
    row = summary_row([], [], Point(perf=0.8, tok=1, lat=1), single_points=[])
    assert all(math.isfinite(value) for value in row.values())
    assert row["P@T1"] == 0 and row["AUC_lat"] == pytest.approx(0.4)
    assert row["gain_log_tok"] == 0  # no points against no reference: both frontiers are 0 everywhere


def test_gain_budgets_are_log_spaced_from_the_cheapest_single_llm_to_the_base_mas() -> None:
    assert gain_budgets([4, 1, 64], 128) == pytest.approx((1, 2, 4, 8, 16, 32, 64, 128))
    assert len(gain_budgets([0.001, 0.5], 10)) == 8


def test_gain_over_single_matches_a_hand_computed_example() -> None:
    single = [(1, 0.4), (4, 0.7), (64, 0.6)]  # frontier (0,0)-(1,.4)-(4,.7): P = .4, .5, .7, .7, ... at 1, 2, 4, ...
    method = [(2, 0.7)]  # frontier (0,0)-(2,.7): P = .35, .7, .7, ...
    # budgets 1, 2, 4, ..., 128: differences -.05, +.2, then 0 six times; mean .15 / 8, in points
    assert gain_over_single(method, single, 128) == pytest.approx(100 * 0.15 / 8)


def test_summary_row_gains_are_in_points_on_each_axis() -> None:
    single = [Point(perf=0.4, tok=1, lat=2), Point(perf=0.7, tok=4, lat=8)]
    method = [Point(perf=0.7, tok=2, lat=256)]
    row = summary_row(method, method, Point(perf=0.9, tok=128, lat=256), single)
    assert row["gain_log_tok"] == pytest.approx(100 * 0.15 / 8)  # the hand-computed example above, on Tok
    # Lat: budgets 2, 4, ..., 256 (the fastest single LLM's 2 to the base MAS's 256); the reference
    # (0,0)-(2,.4)-(8,.7) gives .4, .5, then .7 six times; the method (0,0)-(256,.7) gives .7 * B / 256
    method_sum = 0.7 * sum(2**k for k in range(1, 9)) / 256
    assert row["gain_log_lat"] == pytest.approx(100 * (method_sum - (0.4 + 0.5 + 6 * 0.7)) / 8)
    assert in_points("gain_log_tok", row["gain_log_tok"]) == row["gain_log_tok"]
    assert in_points("P@T1", row["P@T1"]) == pytest.approx(100 * row["P@T1"])


def test_a_degenerate_range_collapses_onto_the_base_mas_budget() -> None:
    # the cheapest single LLM costs the base MAS's budget or more: every budget is the base MAS's
    assert gain_budgets([4, 9], 4) == (4,) * 8
    assert gain_budgets([5, 9], 4) == (4,) * 8
    # single (5, .8) -> P_single(4) = .64; method (2, .5) -> P(4) = .5
    assert gain_over_single([(2, 0.5)], [(5, 0.8)], 4) == pytest.approx(100 * (0.5 - 0.64))
    # no single point at all, or only free ones: no log range either
    assert gain_budgets([], 4) == (4,) * 8
    assert gain_budgets([0, 0], 4) == (4,) * 8


def test_a_free_single_llm_is_left_off_the_log_range_but_lifts_the_reference() -> None:
    single = [(0, 0.3), (2, 0.35), (8, 0.7)]
    assert gain_budgets([b for b, _ in single], 256) == pytest.approx((2, 4, 8, 16, 32, 64, 128, 256))
    # the free backbone's .3 at budget 0 lifts the reference to (0,.3)-(8,.7): .4, .5 at 2, 4 (not .35, .466)
    # method (0,0)-(8,.7): .175, .35 at 2, 4; from 8 on both are .7
    assert gain_over_single([(8, 0.7)], single, 256) == pytest.approx(100 * (-0.225 - 0.15) / 8)
    # only a free backbone: the range collapses onto the base MAS's budget, where the reference is .3
    assert gain_over_single([], [(0, 0.3)], 1) == pytest.approx(-30)


@pytest.mark.parametrize(
    ("pairs", "single", "base_budget"),
    [([(1, 0.5)], [(1, 0.5)], 0), ([(1, 0.5)], [(-1, 0.5)], 4), ([(1, 0.5)], [(1, math.nan)], 4), ([], [], math.inf)],
)
def test_bad_gain_inputs_are_rejected_rather_than_nan(pairs: list, single: list, base_budget: float) -> None:
    with pytest.raises(AgentBalanceError):
        gain_over_single(pairs, single, base_budget)


@pytest.mark.parametrize(
    ("pairs", "base"),
    [
        ([(-1, 0.5)], (1, 1)),
        ([(1, math.nan)], (1, 1)),
        ([(math.inf, 0.5)], (1, 1)),
        ([(1, 0.5)], (0, 1)),
        ([(1, 0.5)], (1, math.nan)),
    ],
)
def test_bad_numbers_are_rejected_rather_than_turned_into_nan(pairs: list, base: tuple) -> None:
    with pytest.raises(AgentBalanceError):
        auc(pairs, base)


# A coarse grid makes ties, duplicates and collinear points frequent.
budgets = st.integers(0, 40).map(lambda k: k / 4)
perfs = st.integers(0, 100).map(lambda k: k / 100)
scatters = st.lists(st.tuples(budgets, perfs), max_size=20)


@given(scatters, st.integers(1, 40).map(lambda k: k / 4), perfs, st.lists(budgets, max_size=5))
@settings(max_examples=300, deadline=None)
def test_frontier_is_concave_non_decreasing_and_above_every_point(
    pairs: list, base_budget: float, base_perf: float, probes: list
) -> None:
    curve = frontier(pairs)
    assert curve.budgets[0] == 0
    vertices = list(zip(curve.budgets, curve.perfs, strict=True))
    assert all(b1 < b2 and p1 <= p2 for (b1, p1), (b2, p2) in pairwise(vertices))
    slopes = [(p2 - p1) / (b2 - b1) for (b1, p1), (b2, p2) in pairwise(vertices)]
    assert all(s2 <= s1 + 1e-9 for s1, s2 in pairwise(slopes))
    for probe in [*probes, *(b for b, _ in pairs)]:
        reached = [p for b, p in pairs if b <= probe]
        assert curve.at(probe) >= max(reached, default=0.0) - 1e-9
    area = auc(pairs, (base_budget, base_perf))
    assert -1e-12 <= area <= max([base_perf, *(p for _, p in pairs)]) + 1e-9


@given(scatters, st.integers(1, 40).map(lambda k: k / 4))
@settings(max_examples=100, deadline=None)
def test_the_single_llm_gains_nothing_over_itself(single: list, base_budget: float) -> None:
    assert gain_over_single(single, single, base_budget) == 0
    points = [Point(perf=p, tok=b, lat=b + 1) for b, p in single]
    row = summary_row(points, points, Point(perf=0.9, tok=base_budget, lat=base_budget + 1), points)
    assert row["gain_log_tok"] == 0 and row["gain_log_lat"] == 0
