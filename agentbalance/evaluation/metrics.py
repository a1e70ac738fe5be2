"""Performance-at-budget P@T / P@L and the AUC of performance-budget frontiers (paper Appendix D).

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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from agentbalance.errors import AgentBalanceError

BUDGET_FRACTIONS = (1 / 8, 1 / 4, 1 / 2, 1.0)
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


def summary_row(method_points: Sequence[Point], base_point: Point) -> dict[str, float]:
    """One summary.csv row (without the method name): P@T1..4, AUC_tok, P@L1..4, AUC_lat."""
    row: dict[str, float] = {}
    for axis, label in (("tok", "T"), ("lat", "L")):
        curve = frontier((getattr(point, axis), point.perf) for point in method_points)
        base_budget = getattr(base_point, axis)
        for k, budget in enumerate(budget_points(base_budget), start=1):
            row[f"P@{label}{k}"] = curve.at(budget)
        row[f"AUC_{axis}"] = curve.area_with_base(base_budget, base_point.perf)
    return {column: row[column] for column in SUMMARY_COLUMNS}


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
