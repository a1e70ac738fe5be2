"""The plug-in over a user's Agent Framework orchestration (sequential, concurrent or group chat): their agents as
the roles, a TrainedController building each task's MAS, run as a fresh Agent Framework workflow.

It holds Agent Framework's side only (reading an orchestration; the shared plug-in core is `adapters.plugin`); it
never trains or reads a run folder (TrainedController does) and never accounts for a run (WorkflowRunner does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_framework import BaseAgent, Executor, WorkflowRunResult
from agent_framework_orchestrations import ConcurrentBuilder, GroupChatBuilder, SequentialBuilder

from agentbalance.adapters.agent_framework.workflow import WorkflowRunner
from agentbalance.adapters.driving import FrameworkRun
from agentbalance.adapters.plugin import BudgetAware, QueryEncoder, UserAgent, roles_from_user_agents
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.mas import Agent as MASAgent
from agentbalance.roles import RoleSet
from agentbalance.worlds.base import World

if TYPE_CHECKING:
    from agentbalance.trained import TrainedController

Orchestration = SequentialBuilder | ConcurrentBuilder | GroupChatBuilder


class Shape(StrEnum):
    """Who reads whom in an orchestration as written."""

    SEQUENTIAL = "sequential"  # each agent reads the conversation so far (all earlier agents)
    CHAIN = "chain"  # a sequential orchestration that passes on the last agent's response only
    CONCURRENT = "concurrent"  # every agent reads the task alone; the decision agent reads them all
    GROUP_CHAT = "group chat"  # a round: each agent speaks once, in order, hearing everything said before


@dataclass(frozen=True)
class WrittenOrchestration:
    """A user's orchestration as the plug-in reads it: its shape, its agents in order, and which one answers."""

    shape: Shape
    agents: tuple[UserAgent, ...]
    decision: str

    def roles(self, critics: Sequence[str] = (), domains: Mapping[str, Sequence[str]] | None = None) -> RoleSet:
        """Its agents as a role library, in their order (`critics`, `domains`: as `roles_from_user_agents`)."""
        return roles_from_user_agents(self.agents, self.decision, critics, domains, source="<Agent Framework agents>")

    def as_written(self, backbone: str) -> MAS:
        """The orchestration as the user wrote it, as a MAS: every agent, one backbone for all, its shape's edges
        (a concurrent one's decision agent reads the others, as an aggregator that is one of the agents)."""
        order = [a.name for a in self.agents if a.name != self.decision] + [self.decision]
        if self.shape in (Shape.SEQUENTIAL, Shape.CHAIN):
            order = [a.name for a in self.agents]  # a sequential orchestration answers with its last agent
        agents = [MASAgent(id=f"u{i}", role=name, backbone=backbone) for i, name in enumerate(order)]
        if self.shape is Shape.CHAIN:
            edges = [(a.id, b.id) for a, b in pairwise(agents)]
        elif self.shape is Shape.CONCURRENT:
            edges = [(a.id, agents[-1].id) for a in agents[:-1]]
        else:
            edges = [(a.id, b.id) for i, a in enumerate(agents) for b in agents[i + 1 :]]
        return MAS(agents, edges, agents[-1].id)


def read_orchestration(orchestration: Orchestration, decision: str | None = None) -> WrittenOrchestration:
    """The shape and agents of a SequentialBuilder, ConcurrentBuilder or GroupChatBuilder (before `build()`; every
    participant an Agent with instructions). `decision` names the agent whose answer is the system's; default: the
    last participant (a sequential orchestration's output; it must be the last one there)."""
    if isinstance(orchestration, SequentialBuilder):
        shape = Shape.CHAIN if orchestration._chain_only_agent_responses else Shape.SEQUENTIAL
        participants = list(orchestration._participants)
    elif isinstance(orchestration, ConcurrentBuilder):
        shape, participants = Shape.CONCURRENT, list(orchestration._participants)
    elif isinstance(orchestration, GroupChatBuilder):
        shape = Shape.GROUP_CHAT
        participants = list(orchestration._participants.values()) or [
            make() for make in orchestration._participant_factories
        ]
    else:
        raise AgentBalanceError(
            f"the plug-in takes a SequentialBuilder, ConcurrentBuilder or GroupChatBuilder (before build()), "
            f"not a {type(orchestration).__name__}"
        )
    agents = tuple(_user_agent(participant) for participant in participants)
    names = [agent.name for agent in agents]
    if len(set(names)) != len(names):
        raise AgentBalanceError(f"the orchestration's agents need distinct names (they become roles): {names}")
    decision = decision or names[-1]
    if shape in (Shape.SEQUENTIAL, Shape.CHAIN) and decision != names[-1]:
        raise AgentBalanceError(
            f"a sequential orchestration answers with its last agent ({names[-1]!r}), not with {decision!r}"
        )
    return WrittenOrchestration(shape, agents, decision)


def _user_agent(participant: object) -> UserAgent:
    """An orchestration's agent as the plug-in keeps it: its name, description and instructions."""
    if isinstance(participant, Executor) or not isinstance(participant, BaseAgent):
        raise AgentBalanceError(
            f"participant {getattr(participant, 'id', participant)!r} is a {type(participant).__name__}; the plug-in "
            "takes agents (Agent with instructions: they become the roles)"
        )
    options: Mapping[str, Any] = getattr(participant, "default_options", None) or {}
    instructions = options.get("instructions")
    if not participant.name or not isinstance(instructions, str) or not instructions.strip():
        raise AgentBalanceError(
            f"agent {participant.name or participant.id!r} needs a name and instructions: it would be a role "
            "without a name or a prompt"
        )
    return UserAgent(participant.name, participant.description or "", instructions)


def roles_from_orchestration(
    orchestration: Orchestration,
    decision: str | None = None,
    critics: Sequence[str] = (),
    domains: Mapping[str, Sequence[str]] | None = None,
) -> RoleSet:
    """A role library from an orchestration's agents (name, description, instructions), in their order: what a
    controller for this orchestration is trained on. `critics`, `domains`: as `roles_from_user_agents`."""
    return read_orchestration(orchestration, decision).roles(critics, domains)


class BudgetAwareOrchestration(BudgetAware[FrameworkRun[WorkflowRunResult]]):
    """A user's Agent Framework orchestration, made budget-aware: per task the controller picks which of its agents
    run, on which backbone, and who reads whom, and the MAS runs as a fresh Agent Framework workflow.

    Exactly one of `clients` (backbone name -> Agent Framework chat client, or a factory per agent slot) and `world`
    (every call answered by an agentbalance world, offline for the simulated and replay worlds). `catalog` prices
    the usage (default: the world's, else the catalog the controller was trained with). `budget`: the budget the
    controller builds for (None: the one it was built for). The orchestration's agents lend their names,
    descriptions and instructions; their own chat clients, tools and memory are not used. `as_written(backbone)`
    is the orchestration as the user wrote it, to run with `run_mas` for comparison. `settings`: clients, world,
    catalog, budget and the runner's (parse, grader, caps, same_answer, request_options). Planning and running:
    `BudgetAware`.
    """

    def __init__(
        self,
        orchestration: Orchestration,
        controller: TrainedController,
        *,
        decision: str | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        **settings: Any,
    ) -> None:
        self.written = read_orchestration(orchestration, decision)
        super().__init__(self.written.roles(critics, domains), controller, WorkflowRunner, **settings)

    @classmethod
    def from_run(
        cls,
        folder: str | Path,
        orchestration: Orchestration,
        *,
        decision: str | None = None,
        world: World | None = None,
        catalog: Catalog | None = None,
        critics: Sequence[str] = (),
        domains: Mapping[str, Sequence[str]] | None = None,
        encoder: QueryEncoder | None = None,
        **settings: Any,
    ) -> BudgetAwareOrchestration:
        """The orchestration over a controller saved by `agentbalance build` (trained on its agents' roles), over
        the world's (or catalog's) backbones; `settings`: the other keywords of BudgetAwareOrchestration."""
        from agentbalance.trained import TrainedController

        roles = roles_from_orchestration(orchestration, decision, critics, domains)
        trained = TrainedController.load(folder, world=world, catalog=catalog, roles=roles, encoder=encoder)  # type: ignore[arg-type]
        written = {"decision": decision, "critics": critics, "domains": domains}
        return cls(orchestration, trained, world=world, catalog=catalog, **written, **settings)

    @property
    def shape(self) -> Shape:
        return self.written.shape

    def as_written(self, backbone: str) -> MAS:
        """The orchestration as the user wrote it: every agent on `backbone`, its shape's edges."""
        return self.written.as_written(backbone)
