"""A budget governor for live traffic: it tightens the budget a controller is served so that the running mean Tok
and Lat of the last `window` served requests stay at or under their budgets. It must never loosen a budget.

It never calls anything, keeps no state outside its instance and takes no locks (one per server, driven from one
event loop). Why it exists: a controller is built so that its *expected* Tok and Lat meet a budget on the
validation questions; live traffic shifts (harder questions make cheap agents disagree, cascades escalate more)
and the served spend per query drifts 20-70% over the budget, in bad cases 8x.

The control law, per governed axis (Tok, Lat), after each finished request that asked a budget on that axis:

    load     = realised / asked          (Tok = cost_usd x 100; each request against its own budget)
    target   = 1 - min(margin_cap, z x cv / sqrt(window))   (cv: coefficient of variation of the window's loads)
    log s   <- clip(log s - (gain / window) x (load / target - 1), log min_scale, 0)

and the next request is served (Tok x s_tok, Lat x s_lat): `OperatingPoint.scaled`. This is budget pacing by dual
ascent, a multiplicative integral controller. The target sits below the budget by the window mean's own noise, so
that each window of a noisy plant stays under the budget, not merely their average. The per-request error is not
clipped: clipping a cascade's 10x escalations would bias the equilibrium above the target.

Why it is stable. With x = log s and g(x) = E[load | x] / target, monotone increasing (a looser budget never spends
less) but otherwise unknown, the update is a Robbins-Monro iteration with a small constant step eta = gain / window
towards the root of g(x) = 1. Its mean dynamics dx/dt = -eta (g(x) - 1) have one equilibrium, towards which
(x - x*)^2 decreases whatever the shape of g: there is no limit cycle between the cheapest and the dearest point.
Linearised, the error evolves as e <- (1 - eta L) e, L = dg/dx the plant's elasticity (cost ~ budget: L ~ 1), and
converges without overshoot while eta L (1 + requests in flight) < 1: at the defaults, plants up to ~6x steeper
than proportional with 10 requests in flight, ~65x with none. On a step-like plant (discrete pools, L infinite at
a step) the knob dithers at the step by at most eta x |error| per request, mixing the two levels in the proportion
that meets the target (a sigma-delta modulator); on a flat stretch it wanders, costing nothing. There is no lag
from the window: each request's own error moves the knob as it finishes; the window only feeds the margin and
`state()`. Summed over a window in which the knob is not clipped, the update gives
mean load = target x (1 + (log s at start - log s at end) / gain): a window can exceed the target only by as much
as the knob fell during it.

Anti-windup: the integrator's state is the knob itself, clipped to [log min_scale, 0], so nothing accumulates past
either end, and the first cheaper requests move it back up. When a window is over the budget although the knob
spent it at the floor, `state()` reports that axis "saturated": the budget cannot be met even at the tightest point.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError

DEFAULT_WINDOW = 200  # requests: the running mean the governor keeps at or under the budget
DEFAULT_GAIN = 3.0  # eta x window: a constant 100% error moves log s by 3 per window (time constant window/3)
DEFAULT_MIN_SCALE = 0.125  # the tightest operating point: an 8x tighter budget (a budget range's default ratio)
DEFAULT_Z = 1.5  # the margin covers the window mean's noise up to z standard errors
MARGIN_CAP = 0.3  # the target is never below 70% of the budget, however noisy the requests
PRIOR_CV = 1.0  # the loads' coefficient of variation assumed until the window holds MIN_CV_SAMPLES of them
MIN_CV_SAMPLES = 10
SATURATION_BAND = 0.1  # "at the floor": within this fraction of the knob's log range above it
AXES = ("tok", "lat")


@dataclass(frozen=True)
class OperatingPoint:
    """The factor applied to each axis of a request's budget, and one scalar knob for controllers that have one.

    `tightening` is how far the tightest axis has gone towards the floor in log scale: 0 is exactly the asked
    budget, 1 is `min_scale` (log s / log min_scale). A one-knob controller (a budget-conditioned grid, which serves
    a budget by its tightest axis anyway) may use `tightening`, or `scaled(budget)` which is exact for it."""

    tok_scale: float = 1.0
    lat_scale: float = 1.0
    tightening: float = 0.0

    def scaled(self, budget: Budget) -> Budget:
        """The budget to serve for a request that asked `budget` (an axis it did not ask stays unbounded)."""
        return Budget(
            budget.tok * self.tok_scale if budget.tok is not None else None,
            budget.lat * self.lat_scale if budget.lat is not None else None,
        )

    def to_json(self) -> dict[str, float]:
        return {"tok_scale": self.tok_scale, "lat_scale": self.lat_scale, "tightening": self.tightening}


@dataclass
class _Axis:
    """One governed axis: the knob (log of its scale) and the window of realised values and loads."""

    log_scale: float
    realised: deque[float]  # Tok or Lat of every request in the window (asked a budget on this axis or not)
    loads: deque[float]  # realised / asked, of the requests in the window that asked a budget on this axis
    asked: deque[float]  # the budgets those requests asked, to report the target in the axis's own units
    knobs: deque[float]  # log_scale after each of those requests, to tell saturation from a passing overload
    load_sum: float = 0.0  # running sums of `loads`, their squares and `knobs` (O(1) per request), recomputed
    load_squares: float = 0.0  # exactly each time the window turns over so that rounding cannot accumulate
    knob_sum: float = 0.0
    since_exact: int = 0

    def add_load(self, load: float, asked: float) -> None:
        """One request's load; `set_knob` follows (the windows of loads and knobs stay the same length)."""
        if len(self.loads) == self.loads.maxlen:
            oldest = self.loads[0]
            self.load_sum -= oldest
            self.load_squares -= oldest * oldest
        self.loads.append(load)
        self.asked.append(asked)
        self.load_sum += load
        self.load_squares += load * load

    def set_knob(self, log_scale: float) -> None:
        if len(self.knobs) == self.knobs.maxlen:
            self.knob_sum -= self.knobs[0]
        self.log_scale = log_scale
        self.knobs.append(log_scale)
        self.knob_sum += log_scale
        self.since_exact += 1
        if self.since_exact >= len(self.loads):
            self.load_sum = math.fsum(self.loads)
            self.load_squares = math.fsum(value * value for value in self.loads)
            self.knob_sum = math.fsum(self.knobs)
            self.since_exact = 0

    def mean_load(self) -> float:
        return self.load_sum / len(self.loads)

    def mean_knob(self) -> float:
        return self.knob_sum / len(self.knobs)

    def load_cv(self) -> float:
        """The loads' coefficient of variation over the window (0 when their mean is 0)."""
        count = len(self.loads)
        mean = self.load_sum / count
        variance = max(0.0, self.load_squares - count * mean * mean) / (count - 1)
        return math.sqrt(variance) / mean if mean > 0 else 0.0


class BudgetGovernor:
    """Keeps the running mean Tok and Lat of the last `window` served requests at or under their budgets by
    scaling each request's budget (`operating_point()`), updated from every finished request (`record`)."""

    def __init__(
        self,
        window: int = DEFAULT_WINDOW,
        *,
        gain: float = DEFAULT_GAIN,
        min_scale: float = DEFAULT_MIN_SCALE,
        z: float = DEFAULT_Z,
        margin_cap: float = MARGIN_CAP,
    ) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 2:
            raise AgentBalanceError(f"the governor's window must be an integer of at least 2 requests, got {window!r}")
        if not (0 < gain <= window / 2 and math.isfinite(gain)):
            raise AgentBalanceError(f"the governor's gain must be in (0, window / 2 = {window / 2}], got {gain}")
        if not (0 < min_scale <= 1):
            raise AgentBalanceError(f"the governor's min_scale must be in (0, 1], got {min_scale}")
        if not (z >= 0 and math.isfinite(z)):
            raise AgentBalanceError(f"the governor's z must be a non-negative number, got {z}")
        if not (0 <= margin_cap < 1):
            raise AgentBalanceError(f"the governor's margin_cap must be in [0, 1), got {margin_cap}")
        self.window = window
        self.gain = gain
        self.min_scale = min_scale
        self.z = z
        self.margin_cap = margin_cap
        self.recorded = 0
        self._axes = {
            name: _Axis(0.0, deque(maxlen=window), deque(maxlen=window), deque(maxlen=window), deque(maxlen=window))
            for name in AXES
        }

    @property
    def step(self) -> float:
        """eta: how far one request's relative error moves log s."""
        return self.gain / self.window

    def operating_point(self) -> OperatingPoint:
        """The scales to apply to the next request's budget."""
        floor = math.log(self.min_scale)
        tightest = min(axis.log_scale for axis in self._axes.values())
        tightening = min(1.0, max(0.0, tightest / floor)) if floor < 0 else 0.0
        return OperatingPoint(math.exp(self._axes["tok"].log_scale), math.exp(self._axes["lat"].log_scale), tightening)

    def tightening(self) -> float:
        """The one-knob view of `operating_point()`: 0 = the asked budget, 1 = the tightest point."""
        return self.operating_point().tightening

    def record(self, cost_usd: float, latency_s: float, budget: Budget) -> None:
        """One finished (or cancelled, partly paid) request: its realised cost in USD for its one query, its
        latency in seconds, and the budget it asked (not the scaled one it was served: the governor's aim is the
        asked budget). An axis the request left unbounded is recorded in the means but moves no knob."""
        cost_usd, latency_s = float(cost_usd), float(latency_s)  # a numpy scalar would leak into state()
        for name, value in (("cost_usd", cost_usd), ("latency_s", latency_s)):
            if not (value >= 0 and math.isfinite(value)):  # our own measurement: a bad one is a bug
                raise ValueError(f"{name} must be a finite non-negative number, got {value}")
        self.recorded += 1
        for name, realised, asked in (("tok", cost_usd * 100, budget.tok), ("lat", latency_s, budget.lat)):
            axis = self._axes[name]
            axis.realised.append(realised)
            if asked is None:
                continue
            load = realised / asked
            axis.add_load(load, asked)
            axis.set_knob(self._moved(axis.log_scale, load, axis))

    def _moved(self, log_scale: float, load: float, axis: _Axis) -> float:
        """The control law: one integral step on the relative error, clipped to [log min_scale, 0]."""
        error = load / self._target(axis) - 1
        return min(0.0, max(math.log(self.min_scale), log_scale - self.step * error))

    def _margin(self, axis: _Axis) -> float:
        """How far below the budget to aim so that a window's mean, not only the long-run mean, stays under it."""
        cv = PRIOR_CV if len(axis.loads) < MIN_CV_SAMPLES else axis.load_cv()
        return min(self.margin_cap, self.z * cv / math.sqrt(self.window))

    def _target(self, axis: _Axis) -> float:
        """The mean load aimed at, as a fraction of the budget."""
        return 1.0 - self._margin(axis)

    def _saturated(self, axis: _Axis) -> bool:
        """The window is over the budget itself although the knob spent it at the floor (its mean within
        SATURATION_BAND of the log range): a passing overload, still being tightened, is not saturation."""
        if not axis.loads:
            return False
        floor = math.log(self.min_scale)
        return axis.mean_load() > 1.0 and axis.mean_knob() <= floor * (1 - SATURATION_BAND)

    def state(self) -> dict[str, Any]:
        """JSON-able: the window, the requests recorded, the window's means, the operating point, the targets, and
        per axis whether it is saturated (over budget even at the tightest point). A mean of an empty window is
        None; `target_*` are in the axis's units at the window's mean asked budget, `target_load_*` in fractions
        of each request's own budget."""
        document: dict[str, Any] = {
            "window": self.window,
            "recorded": self.recorded,
            "in_window": len(self._axes["tok"].realised),
            "operating_point": self.operating_point().to_json(),
            "gain": self.gain,
            "min_scale": self.min_scale,
        }
        saturated = {}
        for name, axis in self._axes.items():
            document[f"mean_{name}"] = _mean(axis.realised)
            document[f"mean_load_{name}"] = _mean(axis.loads)
            governed = bool(axis.loads)
            target_load = self._target(axis) if governed else None
            asked = _mean(axis.asked)
            document[f"target_load_{name}"] = target_load
            document[f"target_{name}"] = target_load * asked if target_load is not None and asked is not None else None
            saturated[name] = self._saturated(axis)
        document["saturated"] = saturated
        return document


def _mean(values: deque[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None
