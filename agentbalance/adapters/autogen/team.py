"""The plug-in over a user's AutoGen team: their agents as the roles, a TrainedController building each task's MAS.

It holds AutoGen's side only (the shared plug-in core is `adapters.plugin`); it never trains or reads a run folder
(TrainedController does) and never accounts for a run (GraphFlowRunner does).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autogen_agentchat.agents import AssistantAgent

from agentbalance.adapters.autogen.graphflow import ClientSource
from agentbalance.adapters.autogen.running import BalancedRun, GraphFlowRunner
from agentbalance.adapters.plugin import BudgetAware, QueryEncoder, UserAgent, roles_from_user_agents
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.roles import RoleSet
from agentbalance.worlds.base import World

if TYPE_CHECKING:
    from agentbalance.trained import TrainedController

_DEFAULT_AGENT_DESCRIPTION = inspect.signature(AssistantAgent.__init__).parameters["description"].default


def roles_from_agents(
    agents: Sequence[AssistantAgent],
    decision: str,
    critics: Sequence[str] = (),
    domains: Mapping[str, Sequence[str]] | None = None,
) -> RoleSet:
    """A role library from a user's AutoGen agents: name, description and system message of each.

    `decision` names the agent whose answer is the team's answer; `critics` the agents that review
    others' answers (kind critic; all others are solvers); `domains` (optional) the domains an agent
    is expert in (general, math, code), which the simulated world's role fit reads.
    """
    described = []
    for agent in agents:
        prompt = _system_message(agent)
        description = agent.description if agent.description != _DEFAULT_AGENT_DESCRIPTION else prompt
        described.append(UserAgent(agent.name, description, prompt))
    return roles_from_user_agents(described, decision, critics, domains, source="<AutoGen agents>")


def _system_message(agent: object) -> str:
    """An AssistantAgent's system message (AgentChat 0.7 keeps it private and exposes it only in its config)."""
    if not isinstance(agent, AssistantAgent):
        raise AgentBalanceError(
            f"agent {getattr(agent, 'name', agent)!r} is a {type(agent).__name__}; the plug-in takes AssistantAgents "
            "(their system messages become the roles)"
        )
    messages = agent._system_messages
    if not messages or not isinstance(messages[0].content, str) or not messages[0].content.strip():
        raise AgentBalanceError(f"agent {agent.name!r} has no system message: it would be a role without a prompt")
    return messages[0].content


class AgentBalanceTeam(BudgetAware[BalancedRun]):
    """A user's AutoGen agents, made budget-aware: per task the controller picks which agents run, on which
    backbone, and who hears whom; the MAS runs as a fresh GraphFlow (so no context leaks between tasks).

    Exactly one of `clients` (backbone name -> model client, or a factory per agent) and `world` (every
    call answered by an agentbalance world, offline for the simulated and replay worlds). `catalog` prices
    the usage (default: the world's, else the catalog the controller was trained with). `budget` is the
    budget the controller builds for (None: the one it was built for; a budget-conditioned controller
    serves any budget of its range). The user's agents lend their names, descriptions and system
    messages; their own model clients, tools and memory are not used. `settings`: world, catalog, budget and the
    runner's (parse, grader, caps, same_answer). Planning and running: `BudgetAware`.
    """

    def __init__(
        self,
        agents: Sequence[AssistantAgent],
        decision: str,
        controller: TrainedController,
        *,
        clients: ClientSource | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        **settings: Any,
    ) -> None:
        roles = roles_from_agents(agents, decision, critics, domains)
        super().__init__(roles, controller, GraphFlowRunner, clients=clients, **settings)

    @classmethod
    def from_run(
        cls,
        folder: str | Path,
        agents: Sequence[AssistantAgent],
        decision: str,
        *,
        world: World | None = None,
        catalog: Catalog | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        encoder: QueryEncoder | None = None,
        **team: Any,
    ) -> AgentBalanceTeam:
        """A team over a controller saved by `agentbalance build` (trained on these agents' roles), over the
        world's (or catalog's) backbones, pooled afresh when they are not the ones it was trained on. `team`:
        the other keywords of AgentBalanceTeam (clients, budget: for a budget-conditioned controller any
        budget of its range, else the one it was built for; parse, grader, caps, same_answer)."""
        from agentbalance.trained import TrainedController

        roles = roles_from_agents(agents, decision, critics, domains)
        trained = TrainedController.load(folder, world=world, catalog=catalog, roles=roles, encoder=encoder)  # type: ignore[arg-type]
        return cls(agents, decision, trained, world=world, catalog=catalog, critics=critics, domains=domains, **team)
