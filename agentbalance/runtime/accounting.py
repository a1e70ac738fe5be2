"""Tokens, USD and latency of a run: per-agent records summed, and the modelled critical-path schedule.

Pure functions of what they are given; no counters that outlive a call.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentbalance.mas import MAS


def modelled_schedule(mas: MAS, latencies: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """(start_s, end_s) of every agent if each starts when all its predecessors end (the critical path).

    Agents absent from `latencies` (skipped) take no time.
    """
    schedule: dict[str, tuple[float, float]] = {}
    for agent_id in mas.topological_order():
        start = max((schedule[p][1] for p in mas.predecessors(agent_id)), default=0.0)
        schedule[agent_id] = (start, start + latencies.get(agent_id, 0.0))
    return schedule


def critical_path_s(mas: MAS, latencies: Mapping[str, float]) -> float:
    """Modelled end-to-end latency: when the decision agent ends."""
    return modelled_schedule(mas, latencies)[mas.decision][1]
