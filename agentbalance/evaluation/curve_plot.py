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


def plot_curves(rows: Sequence[Any], methods: Sequence[str], base: Any, axis: str, path: Path, title: str = "") -> None:
    """Perf against Tok (axis="tok") or Lat ("lat"): every point of that axis's curve, each method's frontier
    (the convexified envelope the metrics use), the base MAS as a star and the P@ budget points."""
    figure, axes = plt.subplots(figsize=(8, 5.5))
    palette = plt.get_cmap("tab20")
    for index, method in enumerate(methods):
        points = [(getattr(r, axis), r.perf) for r in rows if r.method == method and r.counts_on(axis)]
        if not points:
            continue
        colour = palette(index % 20)
        axes.scatter(*zip(*points, strict=True), s=14, color=colour, alpha=0.6)
        curve = frontier(points)
        budgets = [*curve.budgets, max(getattr(base, axis), curve.budgets[-1])]
        axes.plot(
            budgets, [*curve.perfs, curve.perfs[-1]], color=colour, label=method, linewidth=2 if index == 0 else 1.2
        )
    axes.scatter([getattr(base, axis)], [base.perf], marker="*", s=160, color="black", label="base MAS", zorder=4)
    for budget in budget_points(getattr(base, axis)):
        axes.axvline(budget, color="0.7", linestyle=":", linewidth=0.8)
    axes.set_xlabel("Tok, USD per 100 queries" if axis == "tok" else "Lat, seconds per query")
    axes.set_ylabel("Perf (test split)")
    axes.set_xlim(left=0)
    axes.set_title(f"performance-budget frontiers{': ' + title if title else ''}")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, ncol=2)
    save_figure(figure, path, dpi=130)
