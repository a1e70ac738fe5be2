"""Task sources and scorers: synthetic queries for the simulated world (more datasets join here).

Nothing here may import `policy` or `runtime`: tasks hold gold answers, which the controller must never see.
"""

from agentbalance.tasks.synthetic import generate_synthetic, synthetic_topics

__all__ = ["generate_synthetic", "synthetic_topics"]
