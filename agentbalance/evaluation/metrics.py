"""Performance-at-budget P@T / P@L, the AUC of performance-budget frontiers (paper Appendix D) and the gain
over the single-LLM frontier on a log budget scale.

Pure functions of measured numbers: they never run a MAS, never look at test data beyond the points
they are given, and never return NaN.

The rule, fixed before any test number is seen and shared by every method of a run:

1. **Frontier.** A method's measured (budget, perf) points, plus the anchor (0, 0), are convexified:
   the frontier is their upper concave envelope, cut at its highest point. Points dominated by
   another (no cheaper, no better) or lying under the hull are dropped; among points at the same
   budget only the best counts (so a measured point at budget 0 lifts the anchor). The frontier is
   therefore concave and non-decreasing.
2. **P(B).** Linear interpolation between consecutive frontier vertices (b_l, p_l), (b_l+1, p_l+1):
   P(B) = p_l + (B - b_l) / (b_l+1 - b_l) * (p_l+1 - p_l); beyond the last vertex P stays flat at the
   best perf reached. Because every frontier starts at budget 0, P(B) is defined for every B >= 0;
   a method without points has P = 0 everywhere.
3. **Budget points.** B_max is the base MAS's measured budget (Tok for P@T, Lat for P@L) on the test
   split; the base MAS is the complete graph over the role library with the catalog's highest-Perf
   backbone on every agent. T_k = B_max x (1/8, 1/4, 1/2, 1), likewise L_k; P@T_k = P(T_k).
4. **AUC.** The base MAS's measured point (B_max, p_base) is appended to the method's frontier
   after convexification: the integrand is the frontier truncated to [0, B_max] whose right end is
   (B_max, max(P(B_max), p_base)), linear from the last vertex below B_max. Its area over
   [0, B_max] is divided by B_max, so AUC is a perf: 0 <= AUC <= the best perf of the method and base.
   (A method without points scores p_base / 2: the anchor joined to the appended base point.)
5. **Gain over the single LLM, on a log scale** (`gain_log_tok`, `gain_log_lat`). The budget points of
   rule 3 all sit on the plateau when prices span orders of magnitude, so this one looks where choosing
   matters. The reference is the single-LLM frontier: rule 1 over the points of every backbone of the
   catalog alone. Eight budgets are log-spaced (geometric, both ends included) from B_lo, the cheapest
   single-LLM point's budget (Tok; for Lat the fastest one's), to B_max, the base MAS's; at each,
   P(B) of the method's frontier minus P(B) of the reference frontier; the gain is the mean of the
   eight differences, in points (x 100). The `single` method's own gain is therefore 0.
   Degenerate ranges: B_lo is the smallest *positive* single-LLM budget (a free backbone at budget 0
   has no place on a log scale; it still lifts the reference frontier at 0). When there is none, or
   B_lo >= B_max, the range collapses onto B_max: all eight budgets are B_max, and the gain is the
   difference at the base MAS's budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from agentbalance.errors import AgentBalanceError

BUDGET_FRACTIONS = (1 / 8, 1 / 4, 1 / 2, 1.0)
GAIN_BUDGETS = 8  # rule 5: how many log-spaced budgets the gain averages over
GAIN_COLUMNS = ("gain_log_tok", "gain_log_lat")  # in points (x 100); every other summary column is a perf
SUMMARY_COLUMNS = (
    "P@T1",
    "P@T2",
    "P@T3",
    "P@T4",
    "AUC_tok",
    "P@L1",
    "P@L2",
    "P@L3",
    "P@L4",
    "AUC_lat",
    *GAIN_COLUMNS,
)


@dataclass(frozen=True)
class Point:
    """One measured operating point: perf in [0, 1], tok in USD per 100 queries, lat in s per query."""

    perf: float
    tok: float
    lat: float


@dataclass(frozen=True)
class Frontier:
    """Vertices of a convexified frontier: budgets strictly increasing from 0, perfs strictly increasing."""

    budgets: tuple[float, ...]
    perfs: tuple[float, ...]

    def at(self, budget: float) -> float:
        """P(budget): linear between vertices, flat after the last one."""
        budget = _budget(budget, "budget")
        return float(np.interp(budget, self.budgets, self.perfs))

    def area_with_base(self, base_budget: float, base_perf: float) -> float:
        """Mean of the frontier over [0, base_budget] after appending the base point (rule 4)."""
        base_budget = _budget(base_budget, "the base MAS's budget")
        if base_budget <= 0:
            raise AgentBalanceError(f"the base MAS's budget must be positive to integrate over, got {base_budget}")
        base_perf = _finite(base_perf, "the base MAS's perf")
        below = [(b, p) for b, p in zip(self.budgets, self.perfs, strict=True) if b < base_budget]
        budgets, perfs = zip(*below, (base_budget, max(self.at(base_budget), base_perf)), strict=True)
        return float(np.trapezoid(perfs, budgets) / base_budget)


def frontier(pairs: Iterable[tuple[float, float]]) -> Frontier:
    """The convexified upper envelope of (budget, perf) pairs, anchored at (0, 0) (rule 1)."""
    best: dict[float, float] = {0.0: 0.0}
    for budget, perf in pairs:
        budget, perf = _budget(budget, "a point's budget"), _finite(perf, "a point's perf")
        best[budget] = max(best.get(budget, perf), perf)
    hull: list[tuple[float, float]] = []
    for point in sorted(best.items()):
        while len(hull) >= 2 and _turns_left_or_straight(hull[-2], hull[-1], point):
            hull.pop()
        hull.append(point)
    peak = max(range(len(hull)), key=lambda i: (hull[i][1], -i))  # first vertex of the highest perf
    budgets, perfs = zip(*hull[: peak + 1], strict=True)
    return Frontier(tuple(budgets), tuple(perfs))


def _turns_left_or_straight(a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> bool:
    """True when b is on or under the segment a-c (a, b, c by increasing budget): b is not a hull vertex."""
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) >= 0


def budget_points(base_budget: float) -> tuple[float, ...]:
    """T_1..T_4 (or L_1..L_4): the base MAS's budget times 1/8, 1/4, 1/2, 1."""
    base_budget = _budget(base_budget, "the base MAS's budget")
    return tuple(base_budget * fraction for fraction in BUDGET_FRACTIONS)


def performance_at_budgets(pairs: Iterable[tuple[float, float]], base_budget: float) -> tuple[float, ...]:
    """P(T_1)..P(T_4) of a method's (budget, perf) points."""
    curve = frontier(pairs)
    return tuple(curve.at(budget) for budget in budget_points(base_budget))


def auc(pairs: Iterable[tuple[float, float]], base: tuple[float, float]) -> float:
    """AUC of a method's (budget, perf) points over [0, base budget], normalised to a perf (rule 4)."""
    return frontier(pairs).area_with_base(*base)


def gain_budgets(single_budgets: Iterable[float], base_budget: float) -> tuple[float, ...]:
    """The eight budgets of rule 5: log-spaced from the smallest positive single-LLM budget to the base
    MAS's budget; all equal to the base MAS's budget when that range is empty (no positive single-LLM
    budget, or none below the base MAS's)."""
    base_budget = _budget(base_budget, "the base MAS's budget")
    if base_budget <= 0:
        raise AgentBalanceError(f"the base MAS's budget must be positive for the log-spaced gain, got {base_budget}")
    positive = [b for b in (_budget(b, "a single-LLM point's budget") for b in single_budgets) if b > 0]
    low = min([*positive, base_budget])
    return tuple(float(budget) for budget in np.geomspace(low, base_budget, GAIN_BUDGETS))


def gain_over_single(
    pairs: Iterable[tuple[float, float]], single_pairs: Iterable[tuple[float, float]], base_budget: float
) -> float:
    """Rule 5: the mean over `gain_budgets` of P(B) of a method's frontier minus P(B) of the single-LLM
    frontier (`single_pairs`: every backbone alone), in points (x 100)."""
    single_pairs = list(single_pairs)
    method, single = frontier(pairs), frontier(single_pairs)
    budgets = gain_budgets((budget for budget, _ in single_pairs), base_budget)
    return 100 * float(np.mean([method.at(budget) - single.at(budget) for budget in budgets]))


def summary_row(
    tok_points: Sequence[Point], lat_points: Sequence[Point], base_point: Point, single_points: Sequence[Point]
) -> dict[str, float]:
    """One summary.csv row (without the method name): P@T1..4, AUC_tok from the method's Tok-curve points,
    P@L1..4, AUC_lat from its Lat-curve points (perfs in [0, 1]), then gain_log_tok, gain_log_lat (points)
    against the single-LLM points `single_points`. Most methods give the same points to both curves."""
    row: dict[str, float] = {}
    for axis, label, method_points in (("tok", "T", tok_points), ("lat", "L", lat_points)):
        pairs = [(getattr(point, axis), point.perf) for point in method_points]
        curve = frontier(pairs)
        base_budget = getattr(base_point, axis)
        for k, budget in enumerate(budget_points(base_budget), start=1):
            row[f"P@{label}{k}"] = curve.at(budget)
        row[f"AUC_{axis}"] = curve.area_with_base(base_budget, base_point.perf)
        single_pairs = [(getattr(point, axis), point.perf) for point in single_points]
        row[f"gain_log_{axis}"] = gain_over_single(pairs, single_pairs, base_budget)
    return {column: row[column] for column in SUMMARY_COLUMNS}


def in_points(column: str, value: float) -> float:
    """A summary value as the results tables print it: perfs (P@, AUC) x 100, gains as they are (points)."""
    return value if column in GAIN_COLUMNS else 100 * value


def _finite(value: float, what: str) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise AgentBalanceError(f"{what} must be a finite number, got {value}")
    return value


def _budget(value: float, what: str) -> float:
    value = _finite(value, what)
    if value < 0:
        raise AgentBalanceError(f"{what} must not be negative, got {value}")
    return value + 0.0  # -0.0 -> 0.0, so it merges with the anchor
