"""Worlds: where LLM calls go (simulated, replay, live), all behind one protocol.

`open_world` turns a user's `--world` value into a world; heavy modules load only when asked for.
"""

from __future__ import annotations

from pathlib import Path

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.worlds.base import World

WORLD_HELP = (
    "sim (the embedded simulator) | replay:DIR (recorded real outcomes) | "
    "live (an OpenAI-compatible endpoint: $AGENTBALANCE_BASE_URL, $AGENTBALANCE_API_KEY)"
)


def open_world(spec: str, catalog: Catalog | None = None, seed: int = 0) -> World:
    """`sim`/`simulated`, `replay:DIR` or `live`. In a replay world the catalog defaults to the world's models.yaml."""
    if spec in ("sim", "simulated"):
        from agentbalance.worlds.simulated import SimulatedWorld

        return SimulatedWorld(catalog or Catalog.load(), seed=seed)
    if spec.startswith("replay:"):
        from agentbalance.worlds.replay import ReplayWorld

        folder = Path(spec.removeprefix("replay:"))
        world = ReplayWorld.load(folder, seed=seed)
        if catalog is not None:
            world = world.with_catalog(catalog)
        return world
    if spec == "live":
        from agentbalance.worlds.live import LiveWorld

        return LiveWorld(catalog or Catalog.load(), seed=seed)  # endpoint and key from the environment
    raise AgentBalanceError(f"unknown world {spec!r}; use {WORLD_HELP}")
