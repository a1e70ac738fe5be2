"""The simulated world, the embedded default: the simulator (world.py), its questions (questions/, banks/) and its
synthetic domains as tasks (task.py). It must always say it is a simulator; see docs/simulated-world.md.
"""

from agentbalance.worlds.simulated.world import QueryProfile, SimulatedWorld, SimulationParameters, relation

__all__ = ["QueryProfile", "SimulatedWorld", "SimulationParameters", "relation"]
