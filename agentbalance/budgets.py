"""Budgets: one target (`build`), or a range of them served by one budget-conditioned controller.

A budget-conditioned controller (`build --budget-conditioned`, after the budget-conditioned routing of
CoRL) is trained on a log-spaced grid of budgets from B / ratio to B, all axes scaled together (or each
over its own span, `BudgetRange.exponents`). At
inference a budget is served by the grid scale of its tightest axis: the condition input and the
difficulty offset delta calibrated on validation at the neighbouring grid points, interpolated in log
scale. A budget off the trained diagonal (one axis looser than the other) is therefore met, possibly
with performance to spare on the looser axis.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agentbalance.errors import AgentBalanceError


@dataclass(frozen=True)
class Budget:
    """Expected cost limits: Tok in USD per 100 queries, Lat in seconds per query (None: no limit)."""

    tok: float | None = None
    lat: float | None = None

    def __post_init__(self) -> None:
        for name, value in (("budget-tok", self.tok), ("budget-lat", self.lat)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise AgentBalanceError(f"--{name} must be a positive number, got {value}")

    def describe(self) -> str:
        parts = [
            f"Tok {self.tok:.4g} USD/100 queries" if self.tok is not None else "",
            f"Lat {self.lat:.4g} s/query" if self.lat is not None else "",
        ]
        return ", ".join(p for p in parts if p) or "no budget"


@dataclass(frozen=True)
class BudgetRange:
    """The budgets a budget-conditioned controller serves: a log grid of scales s in [1/ratio, 1], the
    budget at scale s being (Tok x s^e_tok, Lat x s^e_lat) of `loosest`. With the default exponents (1, 1)
    every axis is scaled together (`build --budget-conditioned`); smaller exponents let an axis span less
    (the curve's range, where Tok spans 300x and Lat 7x, would otherwise be infeasible on Lat at its low end)."""

    loosest: Budget
    ratio: float = 8.0
    steps: int = 4
    deltas: tuple[float, ...] = field(default=())  # calibrated on validation, one per grid scale
    exponents: tuple[float, float] = (1.0, 1.0)  # (e_tok, e_lat), each in (0, 1]

    def __post_init__(self) -> None:
        if self.loosest.tok is None and self.loosest.lat is None:
            raise AgentBalanceError("--budget-conditioned needs a budget (--budget-tok and/or --budget-lat)")
        if not (self.ratio > 1 and math.isfinite(self.ratio)):
            raise AgentBalanceError(f"--budget-ratio must be a number above 1, got {self.ratio}")
        if self.steps < 2:
            raise AgentBalanceError(f"a budget range needs at least 2 grid steps, got {self.steps}")
        if not all(0 < e <= 1 for e in self.exponents):
            raise AgentBalanceError(f"budget range exponents must be in (0, 1], got {self.exponents}")

    def scales(self) -> list[float]:
        return [float(s) for s in np.geomspace(1 / self.ratio, 1.0, self.steps)]

    def at(self, scale: float) -> Budget:
        """The budget at a scale of the range."""
        tok, lat = self.loosest.tok, self.loosest.lat
        e_tok, e_lat = self.exponents
        return Budget(tok * scale**e_tok if tok is not None else None, lat * scale**e_lat if lat is not None else None)

    def describe(self) -> str:
        """The budgets it serves, tightest to loosest per axis (a looser budget is served by the loosest)."""
        tightest, loosest = self.at(1 / self.ratio), self.loosest
        parts = [
            f"Tok {tightest.tok:.4g} to {loosest.tok:.4g} USD/100 queries" if loosest.tok is not None else "",
            f"Lat {tightest.lat:.4g} to {loosest.lat:.4g} s/query" if loosest.lat is not None else "",
        ]
        return ", ".join(p for p in parts if p)

    def budgets(self) -> list[Budget]:
        """The training grid, tightest first."""
        return [self.at(s) for s in self.scales()]

    def scale_of(self, budget: Budget) -> float:
        """The grid scale serving `budget`: the scale of its tightest axis, capped at 1."""
        scale = self.requested_scale(budget)
        if scale < 1 / self.ratio * (1 - 1e-9):
            raise AgentBalanceError(
                f"budget {budget.describe()} is tighter than this controller was trained for "
                f"(down to {self.at(1 / self.ratio).describe()}); "
                "rebuild with a lower budget or a larger --budget-ratio"
            )
        return scale

    def requested_scale(self, budget: Budget) -> float:
        """The scale of `budget`'s tightest axis, capped at 1, below the range too (then `scale_of` refuses it)."""
        scales = []
        for axis, exponent in zip(("tok", "lat"), self.exponents, strict=True):
            asked, trained = getattr(budget, axis), getattr(self.loosest, axis)
            if asked is None:
                continue
            if trained is None:
                name, other = ("Tok", "Lat") if axis == "tok" else ("Lat", "Tok")
                raise AgentBalanceError(
                    f"this controller was trained without a {name} budget, so it cannot target one; give a {other} "
                    "budget only"
                )
            scales.append((asked / trained) ** (1 / exponent))
        return min(1.0, *scales) if scales else 1.0

    def serve(self, budget: Budget | None) -> tuple[Budget, float]:
        """The condition budget and the calibrated delta for a user's budget (None: the loosest)."""
        scale = self.scale_of(budget) if budget is not None else 1.0
        if len(self.deltas) != self.steps:
            raise AgentBalanceError("this budget range has no calibrated deltas (the run folder is incomplete)")
        delta = float(np.interp(math.log(scale), np.log(self.scales()), self.deltas))
        return self.at(scale), delta

    def with_deltas(self, deltas: Sequence[float]) -> BudgetRange:
        return dataclasses.replace(self, deltas=tuple(float(d) for d in deltas))

    def to_json(self) -> dict[str, object]:
        return {
            "loosest": dataclasses.asdict(self.loosest),
            "ratio": self.ratio,
            "steps": self.steps,
            "deltas": list(self.deltas),
            "exponents": list(self.exponents),
        }

    @classmethod
    def from_json(cls, document: dict[str, object]) -> BudgetRange:
        loosest = document["loosest"]
        assert isinstance(loosest, dict)
        exponents = document.get("exponents", (1.0, 1.0))  # run folders written before exponents existed
        return cls(
            Budget(**loosest),
            float(document["ratio"]),  # type: ignore[arg-type]
            int(document["steps"]),  # type: ignore[call-overload]
            tuple(float(d) for d in document["deltas"]),  # type: ignore[union-attr]
            (float(exponents[0]), float(exponents[1])),  # type: ignore[index]
        )
