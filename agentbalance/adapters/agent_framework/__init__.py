"""The Microsoft Agent Framework adapter: a MAS as a workflow, a trained controller as one agent, script export.

It never decides the MAS (the controller does) nor tokenizes (usage is each response's `usage_details`). Modules by
job: workflow (MAS -> WorkflowBuilder workflow, WorkflowRunner), agent (AgentBalanceAgent), script.
"""

from __future__ import annotations

from agentbalance.errors import AgentBalanceError

INSTALL_HINT = 'pip install "agentbalance[agent-framework]"'

try:  # checked here, before any submodule: a submodule imported once stays cached even if the framework goes
    from agent_framework import BaseAgent, Executor, WorkflowBuilder  # noqa: F401
except ImportError as error:
    raise AgentBalanceError(
        f"the Agent Framework adapter needs agent-framework-core ({error.name or error} is not installed): "
        f"{INSTALL_HINT}"
    ) from None

# the public names, after the check above (hence E402)
from agentbalance.adapters.agent_framework.agent import AgentBalanceAgent  # noqa: E402
from agentbalance.adapters.agent_framework.script import agent_framework_script  # noqa: E402
from agentbalance.adapters.agent_framework.workflow import (  # noqa: E402
    START,
    MASAgentExecutor,
    Said,
    Task,
    WorkflowBuild,
    WorkflowRunner,
    build_workflow,
)
from agentbalance.adapters.driving import AgentSlot, FrameworkRun  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "START",
    "AgentBalanceAgent",
    "AgentSlot",
    "FrameworkRun",
    "MASAgentExecutor",
    "Said",
    "Task",
    "WorkflowBuild",
    "WorkflowRunner",
    "agent_framework_script",
    "build_workflow",
]
