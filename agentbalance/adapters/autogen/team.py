"""The plug-in over a user's AutoGen team: their agents as the roles, a TrainedController building each task's MAS.

It never trains or reads a run folder (TrainedController does) and never accounts for a run (GraphFlowRunner does).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from autogen_agentchat.agents import AssistantAgent

from agentbalance.adapters.autogen.graphflow import ClientSource
from agentbalance.adapters.autogen.running import BalancedRun, GraphFlowRunner, Parse
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query, as_query
from agentbalance.roles import Role, RoleKind, RoleSet
from agentbalance.runtime.execution import Caps, Grader
from agentbalance.worlds.base import SameAnswer, World, same_recorded_answer

if TYPE_CHECKING:
    from agentbalance.budgets import Budget
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
    domains = dict(domains or {})
    known = [getattr(agent, "name", None) for agent in agents]
    for label, names in (("decision", [decision]), ("critics", list(critics)), ("domains", list(domains))):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise AgentBalanceError(
                f"{label}: {', '.join(map(repr, unknown))} is not one of the agents ({', '.join(map(str, known))})"
            )
    roles = []
    for agent in agents:
        prompt = _system_message(agent)
        description = agent.description if agent.description != _DEFAULT_AGENT_DESCRIPTION else prompt
        kind = RoleKind.DECISION if agent.name == decision else RoleKind.SOLVER
        if agent.name in critics and kind is RoleKind.SOLVER:
            kind = RoleKind.CRITIC
        roles.append(
            Role(
                name=agent.name,
                kind=kind,
                description=description,
                prompt=prompt,
                domains=tuple(domains.get(agent.name, ())),
            )
        )
    return RoleSet(roles, source="<AutoGen agents>")


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


class QueryEncoder(Protocol):
    """What the controller needs to see a query: its embedding (agentbalance.encoders.TextEncoder)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class AgentBalanceTeam:
    """A user's AutoGen agents, made budget-aware: per task the controller picks which agents run, on which
    backbone, and who hears whom; the MAS runs as a fresh GraphFlow (so no context leaks between tasks).

    Exactly one of `clients` (backbone name -> model client, or a factory per agent) and `world` (every
    call answered by an agentbalance world, offline for the simulated and replay worlds). `catalog` prices
    the usage (default: the world's, else the catalog the controller was trained with). `budget` is the
    budget the controller builds for (None: the one it was built for; a budget-conditioned controller
    serves any budget of its range). The user's agents lend their names, descriptions and system
    messages; their own model clients, tools and memory are not used.
    """

    def __init__(
        self,
        agents: Sequence[AssistantAgent],
        decision: str,
        controller: TrainedController,
        *,
        clients: ClientSource | None = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        budget: Budget | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        parse: Parse | None = None,
        grader: Grader | None = None,
        caps: Caps | None = None,
        same_answer: SameAnswer = same_recorded_answer,
    ) -> None:
        self.roles = roles_from_agents(agents, decision, critics, domains)
        if catalog is None and world is None and clients is not None:
            catalog = _trained_catalog(controller)
        self.runner = GraphFlowRunner(
            self.roles,
            clients=clients,
            world=world,
            catalog=catalog,
            parse=parse,
            grader=grader,
            caps=caps,
            same_answer=same_answer,
        )
        self.controller = controller
        self.budget = budget
        self._check_controller()
        controller.serving(budget)  # a budget it cannot serve is an error now, not at the first task

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

    def _check_controller(self) -> None:
        context = self.controller.controller.context
        if tuple(context.role_names) != tuple(self.roles.names):
            raise AgentBalanceError(
                f"the controller was trained on roles {list(context.role_names)}, not on these agents "
                f"{list(self.roles.names)} (same names, same order)"
            )
        if context.role_names[context.decision_index] != self.roles.decision.name:
            raise AgentBalanceError(
                f"the controller's decision role is {context.role_names[context.decision_index]!r}, "
                f"not {self.roles.decision.name!r}"
            )
        catalog, clients = self.runner.catalog, self.runner.clients
        unknown = [name for name in context.backbone_names if name not in catalog]
        if unknown:
            raise AgentBalanceError(
                f"the controller chooses among backbones {', '.join(unknown)} that catalog {catalog.source} "
                "does not price"
            )
        if isinstance(clients, Mapping):
            missing = [name for name in context.backbone_names if name not in clients]
            if missing:
                raise AgentBalanceError(
                    f"no model client for backbone(s) {', '.join(missing)}, which the controller may choose"
                )

    @property
    def encoder(self) -> QueryEncoder:
        return self.controller.encoder

    # ---- deciding

    def plan(self, tasks: Sequence[str | Query]) -> list[MAS]:
        """The MAS the controller builds for each task (one batched forward pass; each carries its task's id)."""
        return self.controller.construct_many([as_query(task) for task in tasks], self.budget)

    # ---- running

    async def run(self, task: str | Query) -> BalancedRun:
        """Build this task's MAS and run it as a fresh GraphFlow."""
        query = as_query(task)
        (mas,) = self.plan([query])
        return await self.run_mas(mas, query)

    async def run_many(self, tasks: Sequence[str | Query], concurrency: int = 8) -> list[BalancedRun]:
        """Several tasks, planned in one batch and run concurrently (at most `concurrency` flows at once)."""
        queries = [as_query(task) for task in tasks]
        pairs = list(zip(self.plan(queries), queries, strict=True))
        return await self.runner.run_many(pairs, concurrency)

    async def run_mas(self, mas: MAS, task: str | Query) -> BalancedRun:
        """Run a given MAS over these agents' roles (e.g. the team as the user wrote it) the same way."""
        return await self.runner.run(mas, task)


def _trained_catalog(controller: TrainedController) -> Catalog | None:
    """The catalog the controller's backbones were described by, when it has a run folder to read it from."""
    try:
        return controller.catalog()
    except AgentBalanceError:
        return None  # trained in this process: the caller gives catalog= (GraphFlowRunner says so)
