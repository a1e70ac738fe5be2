"""AutoGen agent names of a MAS's agents: the adapters' common names, with AutoGen's task source reserved.

It only names; it never builds, runs or accounts for a flow.
"""

from __future__ import annotations

from agentbalance.adapters.names import agent_names
from agentbalance.mas import MAS

TASK_SOURCE = "user"  # AutoGen's source name of the task message
RESERVED_NAMES = frozenset({TASK_SOURCE})


def autogen_names(mas: MAS) -> dict[str, str]:
    """AutoGen agent name of every MAS agent id: its role as a Python identifier, suffixed by the id when
    two agents share a role. Deterministic, so the mapping can be recomputed from the MAS alone."""
    return agent_names(mas, RESERVED_NAMES)
