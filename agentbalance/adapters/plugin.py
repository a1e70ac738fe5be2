"""What every framework's plug-in shares: a user's agents as a role library, the checks that a trained controller
fits them, and the plan-then-run loop that makes their system budget-aware over a framework runner.

It holds no framework's calls (autogen/team.py and agent_framework/plugin.py do), never trains nor reads trainer
internals (TrainedController does), and never accounts for a run (the framework's runner does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from agentbalance.adapters.driving import AdapterRunner
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query, as_query
from agentbalance.roles import Role, RoleKind, RoleSet
from agentbalance.worlds.base import World

if TYPE_CHECKING:
    from agentbalance.budgets import Budget
    from agentbalance.trained import TrainedController

RunT = TypeVar("RunT")


@dataclass(frozen=True)
class UserAgent:
    """What a plug-in keeps of one of the user's agents: its name, what it is for, and its instructions."""

    name: str
    description: str
    prompt: str


class QueryEncoder(Protocol):
    """What the controller needs to see a query: its embedding (agentbalance.encoders.TextEncoder)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def roles_from_user_agents(
    agents: Sequence[UserAgent],
    decision: str,
    critics: Sequence[str] = (),
    domains: Mapping[str, Sequence[str]] | None = None,
    source: str = "<the user's agents>",
) -> RoleSet:
    """A role library from a user's agents, in their order: `decision` names the agent whose answer is the system's
    answer; `critics` the agents that review others' answers (kind critic; all others are solvers); `domains`
    (optional) the domains an agent is expert in (general, math, code), which the simulated world's role fit reads."""
    domains = dict(domains or {})
    known = [agent.name for agent in agents]
    for label, names in (("decision", [decision]), ("critics", list(critics)), ("domains", list(domains))):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise AgentBalanceError(
                f"{label}: {', '.join(map(repr, unknown))} is not one of the agents ({', '.join(known)})"
            )
    roles = []
    for agent in agents:
        kind = RoleKind.DECISION if agent.name == decision else RoleKind.SOLVER
        if agent.name in critics and kind is RoleKind.SOLVER:
            kind = RoleKind.CRITIC
        description = agent.description or agent.prompt
        domain = tuple(domains.get(agent.name, ()))
        roles.append(Role(name=agent.name, kind=kind, description=description, prompt=agent.prompt, domains=domain))
    return RoleSet(roles, source=source)


def check_controller(controller: TrainedController, roles: RoleSet, catalog: Catalog, clients: Any) -> None:
    """The controller was trained on these roles (same names, order and decision role), the catalog prices every
    backbone it may choose, and a client mapping has a client for each of them."""
    context = controller.controller.context
    if tuple(context.role_names) != tuple(roles.names):
        raise AgentBalanceError(
            f"the controller was trained on roles {list(context.role_names)}, not on these agents "
            f"{list(roles.names)} (same names, same order)"
        )
    if context.role_names[context.decision_index] != roles.decision.name:
        raise AgentBalanceError(
            f"the controller's decision role is {context.role_names[context.decision_index]!r}, "
            f"not {roles.decision.name!r}"
        )
    unknown = [name for name in context.backbone_names if name not in catalog]
    if unknown:
        raise AgentBalanceError(
            f"the controller chooses among backbones {', '.join(unknown)} that catalog {catalog.source} does not price"
        )
    if isinstance(clients, Mapping):
        missing = [name for name in context.backbone_names if name not in clients]
        if missing:
            raise AgentBalanceError(
                f"no model client for backbone(s) {', '.join(missing)}, which the controller may choose"
            )


def trained_catalog(controller: TrainedController) -> Catalog | None:
    """The catalog the controller's backbones were described by, when it has a run folder to read it from."""
    try:
        return controller.catalog()
    except AgentBalanceError:
        return None  # trained in this process: the caller gives catalog= (the runner says so)


class BudgetAware(Generic[RunT]):
    """A user's system made budget-aware: per task the controller builds the MAS over the user's agents (which run,
    on which backbone, who reads whom) at `budget` (None: the one it was built for; a budget-conditioned
    controller serves any budget of its range), and the framework's runner runs it afresh (no context leaks
    between tasks). `runner` is the framework's AdapterRunner class, made with `clients` or `world`, `catalog`
    (default: the world's, else the catalog the controller was trained with) and its other `settings` (parse,
    grader, caps, same_answer, ...). Checked at once: a controller of other roles, a missing client or a budget it
    cannot serve is an error here, not at the first task."""

    def __init__(
        self,
        roles: RoleSet,
        controller: TrainedController,
        runner: type[AdapterRunner[Any]],
        *,
        clients: Any = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        budget: Budget | None = None,
        **settings: Any,
    ) -> None:
        if catalog is None and world is None and clients is not None:
            catalog = trained_catalog(controller)
        self.roles = roles
        self.controller = controller
        self.runner = runner(roles, clients=clients, world=world, catalog=catalog, **settings)
        self.budget = budget
        check_controller(controller, roles, self.runner.catalog, self.runner.clients)
        controller.serving(budget)

    @property
    def encoder(self) -> QueryEncoder:
        return self.controller.encoder

    def plan(self, tasks: Sequence[str | Query]) -> list[MAS]:
        """The MAS the controller builds for each task (one batched forward pass; each carries its task's id)."""
        return self.controller.construct_many([as_query(task) for task in tasks], self.budget)

    async def run(self, task: str | Query) -> RunT:
        """Build this task's MAS and run it in the framework."""
        query = as_query(task)
        (mas,) = self.plan([query])
        return await self.run_mas(mas, query)

    async def run_many(self, tasks: Sequence[str | Query], concurrency: int = 8) -> list[RunT]:
        """Several tasks, planned in one batch and run concurrently (at most `concurrency` at once)."""
        queries = [as_query(task) for task in tasks]
        pairs = list(zip(self.plan(queries), queries, strict=True))
        runs: list[RunT] = await self.runner.run_many(pairs, concurrency)
        return runs

    async def run_mas(self, mas: MAS, task: str | Query) -> RunT:
        """Run a given MAS over these agents' roles (e.g. the system as the user wrote it) the same way."""
        run: RunT = await self.runner.run(mas, task)  # type: ignore[assignment]
        return run
