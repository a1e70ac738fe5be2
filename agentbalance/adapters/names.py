"""Framework names of a MAS's agents: readable, unique Python identifiers, recomputable from the MAS alone.

It only names (every adapter and exported script uses it); it never builds, runs or accounts for anything.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Collection

from agentbalance.mas import MAS


def agent_names(mas: MAS, reserved: Collection[str] = ()) -> dict[str, str]:
    """Name of every MAS agent id: its role as a Python identifier, suffixed by the id when two agents share a
    role or the role's name is `reserved` (a framework's own name, such as AutoGen's task source). Deterministic,
    so the mapping can be recomputed from the MAS alone."""
    slugs = {agent.id: identifier(agent.role) for agent in mas.agents}
    repeated = {slug for slug in slugs.values() if list(slugs.values()).count(slug) > 1}
    names: dict[str, str] = {}
    for agent in mas.agents:
        name = slugs[agent.id]
        if name in repeated or name in reserved:
            name = f"{name}_{identifier(agent.id)}"
        base, suffix = name, 2
        while name in names.values() or name in reserved:  # ids that collide once made identifiers ("a-0", "a_0")
            name, suffix = f"{base}_{suffix}", suffix + 1
        names[agent.id] = name
    return names


def identifier(text: str) -> str:
    """A Python identifier that keeps the text readable: "Final Answerer" -> "Final_Answerer"."""
    name = re.sub(r"\W+", "_", text.strip(), flags=re.ASCII).strip("_") or "agent"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = f"agent_{name}"
    return name
