"""agentbalance: cost-effective LLM multi-agent systems under token-cost and latency budgets.

Importing the package must stay cheap: heavy dependencies (torch, sentence-transformers) load lazily.
"""

from agentbalance.catalog import Backbone, Catalog, CostAssumptions
from agentbalance.errors import AgentBalanceError
from agentbalance.pooling import PoolingResult, build_pools, pareto_front
from agentbalance.roles import Role, RoleSet

__all__ = [
    "AgentBalanceError",
    "Backbone",
    "Catalog",
    "CostAssumptions",
    "PoolingResult",
    "Role",
    "RoleSet",
    "build_pools",
    "pareto_front",
]

__version__ = "0.1.0"
