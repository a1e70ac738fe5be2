"""agentbalance: cost-effective LLM multi-agent systems under token-cost and latency budgets.

Importing the package must stay cheap: heavy dependencies (torch, sentence-transformers) load lazily.
"""

from typing import TYPE_CHECKING, Any

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.catalog import Backbone, Catalog, CostAssumptions
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.pooling import PoolingResult, build_pools, pareto_front
from agentbalance.query import Query
from agentbalance.roles import Role, RoleSet
from agentbalance.runtime.execution import Caps
from agentbalance.runtime.runner import Runner
from agentbalance.runtime.trace import Trace
from agentbalance.worlds import open_world

if TYPE_CHECKING:
    from agentbalance.trained import TrainedController


def __getattr__(name: str) -> Any:
    """`agentbalance.TrainedController` loads torch and the encoder only when first asked for."""
    if name == "TrainedController":
        from agentbalance.trained import TrainedController

        return TrainedController
    raise AttributeError(f"module 'agentbalance' has no attribute {name!r}")


__all__ = [
    "MAS",
    "Agent",
    "AgentBalanceError",
    "Backbone",
    "Budget",
    "BudgetRange",
    "Caps",
    "Catalog",
    "CostAssumptions",
    "PoolingResult",
    "Query",
    "Role",
    "RoleSet",
    "Runner",
    "Trace",
    "TrainedController",
    "build_pools",
    "open_world",
    "pareto_front",
]

__version__ = "0.2.0"
