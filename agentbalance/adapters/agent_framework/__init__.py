"""The Microsoft Agent Framework adapter: a MAS as a workflow, a trained controller as one agent, script export.

It never decides the MAS (the controller does) nor tokenizes (usage is each response's `usage_details`). Modules by
job: workflow (MAS -> WorkflowBuilder workflow, WorkflowRunner), agent (AgentBalanceAgent), plugin (an orchestration
made budget-aware: BudgetAwareOrchestration), script.
"""

from __future__ import annotations

from agentbalance.errors import AgentBalanceError

INSTALL_HINT = 'pip install "agentbalance[agent-framework]"'

try:  # checked here, before any submodule: a submodule imported once stays cached even if the framework goes
    from agent_framework import BaseAgent, Executor, WorkflowBuilder  # noqa: F401
    from agent_framework_orchestrations import ConcurrentBuilder, GroupChatBuilder, SequentialBuilder  # noqa: F401
except ImportError as error:
    raise AgentBalanceError(
        "the Agent Framework adapter needs agent-framework-core and agent-framework-orchestrations "
        f"({error.name or error} is not installed): "
        f"{INSTALL_HINT}"
    ) from None

# the public names, after the check above (hence E402)
from agentbalance.adapters.agent_framework.agent import AgentBalanceAgent  # noqa: E402
from agentbalance.adapters.agent_framework.plugin import (  # noqa: E402
    BudgetAwareOrchestration,
    Shape,
    WrittenOrchestration,
    read_orchestration,
    roles_from_orchestration,
)
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
    "BudgetAwareOrchestration",
    "FrameworkRun",
    "MASAgentExecutor",
    "Said",
    "Shape",
    "Task",
    "WorkflowBuild",
    "WorkflowRunner",
    "WrittenOrchestration",
    "agent_framework_script",
    "build_workflow",
    "read_orchestration",
    "roles_from_orchestration",
]
