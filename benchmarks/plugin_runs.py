"""What the plug-in benchmarks (autogen_plugin.py, agent_framework_plugin.py) report of a set of runs.

It only summarises runs it is given; it never runs, trains or writes anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentbalance.adapters.driving import FrameworkRun


def summary(runs: Sequence[FrameworkRun[Any]]) -> dict[str, Any]:
    """Perf (share right), Tok (USD per 100 queries), Lat (s per query) and what ran, over the runs."""
    traces = [run.trace for run in runs]
    return {
        "perf": float(np.mean([bool(t.correct) for t in traces])),
        "tok": float(100 * np.mean([t.cost_usd for t in traces])),
        "lat": float(np.mean([t.latency_s for t in traces])),
        "agents_mean": float(np.mean([len(run.mas) for run in runs])),
        "edges_mean": float(np.mean([len(run.mas.edges) for run in runs])),
        "backbones": dict(Counter(a.backbone for run in runs for a in run.mas.agents).most_common()),
        "roles": dict(Counter(a.role for run in runs for a in run.mas.agents).most_common()),
        "wall_s_per_query": float(np.mean([t.wall_s for t in traces])),
    }


def line(row: dict[str, Any]) -> str:
    """One summary as a printed line."""
    return (
        f"Perf {100 * row['perf']:.1f}%, Tok ${row['tok']:.3f}/100q, Lat {row['lat']:.1f} s, "
        f"{row['agents_mean']:.2f} agents"
    )
