"""The performance-budget figure of a sweep: every measured point, each method's frontier, the base MAS.

Never opens a window (agentbalance.plots selects the Agg backend); it draws what the metrics computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from agentbalance.evaluation.metrics import budget_points, frontier
from agentbalance.plots import save_figure

# the methods a reader compares: drawn last (on top), thicker
FOREGROUND = ("agentbalance", "single", "single-val", "plan-menu")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
LINE_STYLES = ("-", "--", "-.", ":")


def plot_curves(rows: Sequence[Any], methods: Sequence[str], base: Any, axis: str, path: Path, title: str = "") -> None:
    """Perf (%) against Tok (axis="tok") or Lat ("lat") on a log cost axis (the useful region of a Tok axis is a
    tenth of a linear one's width): every point of that axis's curve, each method's frontier (the convexified
    envelope the metrics use; its anchor at cost 0 has no place on a log axis), the base MAS as a star and the P@
    budget points. Each method has its own colour, marker and line style; the compared ones (`FOREGROUND`) are on
    top. A point that costs nothing (a free backbone) is left out of the drawing, not of the metrics."""
    figure, axes = plt.subplots(figsize=(8, 5.5))
    palette = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")  # tab20's pairs look alike: only when needed
    for index, method in enumerate(methods):
        points = [(getattr(r, axis), r.perf) for r in rows if r.method == method and r.counts_on(axis)]
        if not points:
            continue
        style = {
            "color": palette(index % palette.N),
            "zorder": 3 if method in FOREGROUND else 2,
        }
        shown = [(cost, 100 * perf) for cost, perf in points if cost > 0]
        if shown:
            axes.scatter(*zip(*shown, strict=True), s=18, alpha=0.7, marker=MARKERS[index % len(MARKERS)], **style)
        curve = frontier(points)
        budgets = [*curve.budgets, max(getattr(base, axis), curve.budgets[-1])]
        perfs = [*curve.perfs, curve.perfs[-1]]
        line = [(b, 100 * p) for b, p in zip(budgets, perfs, strict=True) if b > 0]
        if line:
            axes.plot(
                *zip(*line, strict=True),
                label=method,
                linestyle=LINE_STYLES[index % len(LINE_STYLES)],
                marker=MARKERS[index % len(MARKERS)],
                markevery=[len(line) - 1],
                linewidth=2.2 if method in FOREGROUND else 1.0,
                **style,
            )
    axes.scatter([getattr(base, axis)], [100 * base.perf], marker="*", s=160, color="black", label="base MAS", zorder=4)
    for budget in budget_points(getattr(base, axis)):
        axes.axvline(budget, color="0.7", linestyle=":", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("Tok, USD per 100 queries (log scale)" if axis == "tok" else "Lat, seconds per query (log scale)")
    axes.set_ylabel("Perf, % (test split)")
    axes.set_title(f"performance-budget frontiers{': ' + title if title else ''}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, ncol=2)
    save_figure(figure, path, dpi=130)
