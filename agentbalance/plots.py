"""Figures written to files (PNG): the pools scatter, the training history, and the one way to save a figure.

Never opens a window: the Agg backend only.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from agentbalance.errors import AgentBalanceError
from agentbalance.pooling import PoolingResult


def plot_pools(result: PoolingResult, path: Path, title: str = "") -> None:
    """Scatter of log TokCost vs Perf; colour = pool, dominated backbones grey crosses, names annotated."""
    triples = result.triples
    figure, axes = plt.subplots(figsize=(8, 5.5))
    palette = plt.get_cmap("viridis")
    pool_count = max(len(result.pools), 1)
    for index in range(len(result.pools)):
        members = triples[triples["pool"] == index]
        axes.scatter(
            members["tok_cost"],
            members["perf"],
            s=60,
            color=palette(index / max(pool_count - 1, 1)),
            label=f"pool {index}",
            zorder=3,
        )
    dropped = triples[~triples["kept"]]
    if len(dropped):
        axes.scatter(dropped["tok_cost"], dropped["perf"], marker="x", color="0.6", label="dominated", zorder=2)
    for name, row in triples.iterrows():
        axes.annotate(
            f"{name}{' [R]' if row.reasoning else ''}",
            (row.tok_cost, row.perf),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7,
            color="0.1" if row.kept else "0.55",
        )
    priced = triples["tok_cost"][triples["tok_cost"] > 0]
    if len(priced) < len(triples):  # a free backbone has no place on a log axis: linear below the cheapest priced
        axes.set_xscale("symlog", linthresh=float(priced.min()) if len(priced) else 1e-4)
        axes.set_xlabel("TokCost (USD per 100 single-agent queries, log scale; linear near 0 = free)")
    else:
        axes.set_xscale("log")
        axes.set_xlabel("TokCost (USD per 100 single-agent queries, log scale)")
    axes.set_ylabel(f"Perf (mean of {', '.join(result.benchmarks)})")
    axes.set_title(f"Pareto front and pools{': ' + title if title else ''}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    save_figure(figure, path, dpi=130)


def plot_training(
    history: list[dict[str, float]],
    budget: object,
    path: Path,
    kept: tuple[int | None, dict[str, float]] | None = None,
    title: str = "",
) -> None:
    """Validation Perf (%), Tok and Lat per epoch of one training run, with the budgets as dashed lines; `kept`
    (the epoch kept, 0 for the anchored start, and its validation Perf/Tok/Lat after calibration) is a star, so a
    reader sees which weights the controller holds and that they need not be the last epoch's."""
    epochs = [row["epoch"] for row in history]
    figure, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    panels = [
        ("val_perf", "Perf (validation, %)", None, 100.0),
        ("val_tok", "Tok, USD / 100 queries", getattr(budget, "tok", None), 1.0),
        ("val_lat", "Lat, s / query", getattr(budget, "lat", None), 1.0),
    ]
    for axis, (key, label, limit, scale) in zip(axes, panels, strict=True):
        axis.plot(epochs, [scale * row[key] for row in history], marker="o", markersize=3, label="each epoch")
        upper = f"{key}_upper"
        if history and upper in history[0]:
            axis.plot(epochs, [scale * row[upper] for row in history], linestyle=":", label="upper bound")
        if limit is not None:
            axis.axhline(limit, color="red", linestyle="--", label="budget")
        if kept is not None and kept[0] is not None:
            axis.plot([kept[0]], [scale * kept[1][key.removeprefix("val_")]], marker="*", markersize=13,
                      color="black", linestyle="none", label="kept (δ calibrated)", zorder=4)  # fmt: skip
        axis.set_title(label)
        axis.set_xlabel("epoch (0: the anchored start)" if kept is not None and kept[0] == 0 else "epoch")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    if title:
        figure.suptitle(title, fontsize=10)
    save_figure(figure, path, dpi=110)


def save_figure(figure: plt.Figure, path: Path, dpi: int) -> None:
    """Write a PNG (creating its folder) and free the figure, whatever happens."""
    figure.tight_layout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=dpi)
    except OSError as error:
        raise AgentBalanceError(f"cannot write plot {path}: {error}") from None
    finally:
        plt.close(figure)
