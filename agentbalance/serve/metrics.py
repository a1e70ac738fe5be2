"""The server's Prometheus metrics (prometheus-client): requests, spend, tokens, latency, what the MAS skipped and
escalated, cancelled requests and the budget governor's state, in one registry per app.

It only counts what it is told; it never reads a request, a question or a key, and keeps no module-level registry
(two apps in one process, as in the tests, count apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from agentbalance.runtime.trace import Trace

# seconds: from a cached or simulated answer (milliseconds) to a slow MAS of reasoning backbones (minutes)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 120, 300, float("inf"))
GOVERNOR_GAUGES = {
    "window_requests": "Served requests in the governor's window",
    "window_mean_tok": "Mean Tok (USD per 100 queries) of the requests in the governor's window",
    "window_mean_lat": "Mean latency (s per query) of the requests in the governor's window",
    "tok_scale": "The governor's factor on the Tok budget (1: the budget asked; lower: tighter)",
    "lat_scale": "The governor's factor on the Lat budget (1: the budget asked; lower: tighter)",
    "saturated": "1 when the governor is at its tightest point and the window is still over budget",
}


class ServeMetrics:
    """Every metric of one app, registered in its own registry; `exposition()` is what /metrics answers."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "agentbalance_requests", "Chat completion requests by HTTP status", ["status", "stream"], registry=registry
        )
        self.in_flight = Gauge(
            "agentbalance_requests_in_flight", "Requests admitted and not yet answered", registry=registry
        )
        self.spend = Counter(
            "agentbalance_spend_usd", "USD spent on LLM calls (cancelled runs included)", registry=registry
        )
        self.tokens = Counter("agentbalance_tokens", "Tokens of the MAS's calls", ["kind"], registry=registry)
        self.latency = Histogram(
            "agentbalance_request_seconds",
            "Wall time of answered requests, from admission to the answer",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.modelled_latency = Histogram(
            "agentbalance_mas_latency_seconds",
            "The MAS's critical-path latency (modelled in the simulator, measured calls in a live world)",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.agents = Counter(
            "agentbalance_agents", "Agents of served MAS by what they did", ["outcome"], registry=registry
        )
        self.escalations = Counter(
            "agentbalance_escalations", "Conditional agents that ran because their inputs disagreed", registry=registry
        )
        self.cancelled = Counter(
            "agentbalance_cancelled_requests", "Requests whose client left before the answer", registry=registry
        )
        self.cancelled_calls = Counter(
            "agentbalance_cancelled_calls", "LLM calls in flight cancelled because their client left", registry=registry
        )
        self.governor = {
            name: Gauge(f"agentbalance_governor_{name}", text, registry=registry)
            for name, text in GOVERNOR_GAUGES.items()
        }

    def answered(self, trace: Trace, wall_s: float) -> None:
        """A MAS run that finished (whatever status its request then got)."""
        self.spend.inc(trace.cost_usd)
        self.tokens.labels("prompt").inc(trace.prompt_tokens)
        self.tokens.labels("completion").inc(trace.completion_tokens)
        self.tokens.labels("reasoning").inc(sum(agent.reasoning_tokens for agent in trace.agents))
        self.latency.observe(wall_s)
        self.modelled_latency.observe(trace.latency_s)
        for agent in trace.agents:
            outcome = "failed" if agent.error is not None else "skipped" if agent.skipped is not None else "ran"
            self.agents.labels(outcome).inc()
            self.escalations.inc(agent.escalated)

    def cancelled_run(self, cost_usd: float, calls_in_flight: int) -> None:
        """A run cancelled because its client left: what its finished calls cost, and the calls cut short."""
        self.spend.inc(cost_usd)
        self.cancelled.inc()
        self.cancelled_calls.inc(calls_in_flight)

    def status(self, status: int, stream: bool) -> None:
        self.requests.labels(str(status), "true" if stream else "false").inc()

    def governed(self, state: Mapping[str, Any]) -> None:
        """The governor's state after a request (`BudgetGovernor.state()`)."""
        point, saturated = state["operating_point"], state["saturated"]
        values = {
            "window_requests": state["in_window"],
            "window_mean_tok": state["mean_tok"],
            "window_mean_lat": state["mean_lat"],
            "tok_scale": point["tok_scale"],
            "lat_scale": point["lat_scale"],
            "saturated": any(saturated.values()),
        }
        for name, value in values.items():
            if value is not None:
                self.governor[name].set(float(value))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
