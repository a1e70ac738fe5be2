"""The AutoGen AgentChat adapter: MAS as GraphFlows, world-backed clients, the plug-in team, script export.

It never decides the MAS (the controller does) nor tokenizes (usage is each call's `models_usage`). Modules
by job: names, graphflow (MAS -> GraphFlow), world_client, running (GraphFlowRunner), team, script.
"""

from __future__ import annotations

from agentbalance.errors import AgentBalanceError

INSTALL_HINT = 'pip install "agentbalance[autogen]"'

try:  # checked here, before any submodule: a submodule imported once stays cached even if AutoGen goes
    from autogen_agentchat.agents import MessageFilterAgent, PerSourceFilter  # noqa: F401
    from autogen_agentchat.base import TaskResult  # noqa: F401
    from autogen_agentchat.teams import DiGraphBuilder, GraphFlow  # noqa: F401
    from autogen_core.models import ChatCompletionClient, RequestUsage  # noqa: F401
except ImportError as error:
    raise AgentBalanceError(
        f"the AutoGen adapter needs AutoGen AgentChat 0.7 ({error.name or error} is not installed): {INSTALL_HINT}"
    ) from None

# the public names, after the check above (hence E402)
from agentbalance.adapters.autogen.graphflow import (  # noqa: E402  # noqa: E402
    AgentSlot,
    ClientFactory,
    ClientSource,
    FlowBuild,
    build_graphflow,
    to_graphflow,
)
from agentbalance.adapters.autogen.names import RESERVED_NAMES, TASK_SOURCE, autogen_names  # noqa: E402
from agentbalance.adapters.autogen.running import BalancedRun, ExecutionClient, GraphFlowRunner, Parse  # noqa: E402
from agentbalance.adapters.autogen.script import autogen_script  # noqa: E402
from agentbalance.adapters.autogen.team import AgentBalanceTeam, QueryEncoder, roles_from_agents  # noqa: E402
from agentbalance.adapters.autogen.world_client import CONTEXT_TOKENS, WORLD_MODEL_INFO, WorldChatClient, WorldClients  # noqa: E402  # noqa: E402
from agentbalance.query import as_query  # noqa: E402
from agentbalance.runtime.execution import Grader  # noqa: E402

__all__ = [
    "CONTEXT_TOKENS",
    "INSTALL_HINT",
    "RESERVED_NAMES",
    "TASK_SOURCE",
    "WORLD_MODEL_INFO",
    "AgentBalanceTeam",
    "AgentSlot",
    "BalancedRun",
    "ClientFactory",
    "ClientSource",
    "ExecutionClient",
    "FlowBuild",
    "Grader",
    "GraphFlowRunner",
    "Parse",
    "QueryEncoder",
    "WorldChatClient",
    "WorldClients",
    "as_query",
    "autogen_names",
    "autogen_script",
    "build_graphflow",
    "roles_from_agents",
    "to_graphflow",
]
