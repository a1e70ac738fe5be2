"""The LangGraph adapter: a MAS as a StateGraph (conditional agents through conditional edges), script export.

It never decides the MAS (the controller does) nor tokenizes (usage is each reply's `usage_metadata`). Modules by
job: graph (MAS -> StateGraph, StateGraphRunner), script.
"""

from __future__ import annotations

from agentbalance.errors import AgentBalanceError

INSTALL_HINT = 'pip install "agentbalance[langgraph]"'

try:  # checked here, before any submodule: a submodule imported once stays cached even if LangGraph goes
    from langgraph.graph import StateGraph  # noqa: F401
except ImportError as error:
    raise AgentBalanceError(
        f"the LangGraph adapter needs langgraph 1.x ({error.name or error} is not installed): {INSTALL_HINT}"
    ) from None

# the public names, after the check above (hence E402)
from agentbalance.adapters.driving import AgentSlot, FrameworkRun  # noqa: E402
from agentbalance.adapters.langgraph.graph import (  # noqa: E402
    DONE,
    GATE,
    PASS,
    GraphBuild,
    MASState,
    StateGraphRunner,
    Steps,
    build_graph,
    execution_steps,
)
from agentbalance.adapters.langgraph.script import langgraph_script  # noqa: E402

__all__ = [
    "DONE",
    "GATE",
    "INSTALL_HINT",
    "PASS",
    "AgentSlot",
    "FrameworkRun",
    "GraphBuild",
    "MASState",
    "StateGraphRunner",
    "Steps",
    "build_graph",
    "execution_steps",
    "langgraph_script",
]
