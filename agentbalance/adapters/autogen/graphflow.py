"""A MAS as an AutoGen GraphFlow: one AssistantAgent per MAS agent, seeing only the task and its inputs.

It translates the MAS's shape and wiring; it never runs the flow, accounts for it, or decides the MAS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from autogen_agentchat.agents import AssistantAgent, MessageFilterAgent, MessageFilterConfig, PerSourceFilter
from autogen_agentchat.teams import DiGraph, DiGraphBuilder, GraphFlow
from autogen_core.models import ChatCompletionClient

from agentbalance.adapters.autogen.names import TASK_SOURCE, autogen_names
from agentbalance.adapters.driving import AgentSlot, check_roles, pick_client
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet

ClientFactory = Callable[[AgentSlot], ChatCompletionClient]
ClientSource = Mapping[str, ChatCompletionClient] | ClientFactory  # by backbone name, or per agent


@dataclass(frozen=True)
class FlowBuild:
    """A GraphFlow and how it maps to its MAS: AutoGen names and the model client of each agent id."""

    flow: GraphFlow
    graph: DiGraph
    names: dict[str, str]  # MAS agent id -> AutoGen agent name
    clients: dict[str, ChatCompletionClient]  # MAS agent id -> its model client

    @property
    def ids(self) -> dict[str, str]:
        """AutoGen agent name -> MAS agent id."""
        return {name: agent_id for agent_id, name in self.names.items()}


def to_graphflow(mas: MAS, clients: ClientSource, roles: RoleSet) -> GraphFlow:
    """The MAS as an AutoGen GraphFlow (see `build_graphflow` for the mapping and the clients used)."""
    return build_graphflow(mas, clients, roles).flow


def build_graphflow(mas: MAS, clients: ClientSource, roles: RoleSet) -> FlowBuild:
    """One AssistantAgent per MAS agent (its role's prompt as system message, its backbone's client), wrapped
    so it sees only the task and its predecessors' last messages, wired by the MAS edges.

    `clients` maps backbone names to model clients, or is a factory called once per agent. Gated-off
    agents are not in a MAS, so they are not in the graph; the decision agent is the single leaf.
    """
    check_roles(mas, roles)
    names = autogen_names(mas)
    builder = DiGraphBuilder()
    made: dict[str, ChatCompletionClient] = {}
    for agent_id in mas.topological_order():
        agent = mas.agent(agent_id)
        role = roles[agent.role]
        slot = AgentSlot(agent, names[agent_id], role)
        client = made[agent_id] = client_for(clients, slot)
        inner = AssistantAgent(slot.name, model_client=client, system_message=role.prompt, description=role.description)
        visible = [PerSourceFilter(source=TASK_SOURCE, position="first", count=1)]
        visible += [PerSourceFilter(source=names[p], position="last", count=1) for p in mas.predecessors(agent_id)]
        builder.add_node(MessageFilterAgent(slot.name, inner, MessageFilterConfig(per_source=visible)))
    for source, target in mas.edges:
        builder.add_edge(names[source], names[target])
    try:
        graph = builder.build()
    except ValueError as error:
        raise AgentBalanceError(f"AutoGen rejects the graph of {mas!r}: {error}") from None
    leaves = graph.get_leaf_nodes()
    if leaves != {names[mas.decision]}:
        raise AgentBalanceError(
            f"{mas!r}: the decision agent {mas.decision!r} must be the only agent without successors, "
            f"found {', '.join(sorted(leaves))}"
        )
    participants = [builder.agents[names[agent_id]] for agent_id in mas.topological_order()]
    return FlowBuild(GraphFlow(participants, graph=graph), graph, names, made)


def client_for(clients: ClientSource, slot: AgentSlot) -> ChatCompletionClient:
    """The model client of one agent: by its backbone from a mapping, or from a factory; checked."""
    client: ChatCompletionClient = pick_client(
        clients, slot, ChatCompletionClient, "an autogen_core ChatCompletionClient"
    )
    return client
