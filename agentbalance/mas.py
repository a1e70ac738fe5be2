"""The multi-agent system G_Q = (V_Q, E_Q): agents (role + backbone), directed edges, one decision agent.

A MAS is valid by construction (acyclic, no dangling edges, every agent feeds the decision agent);
it describes what to run and never runs anything itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError, describe_validation_error, require_unique_names
from agentbalance.files import parse_json
from agentbalance.roles import RoleSet

When = Literal["always", "disagree", "never"]
CONDITIONS: tuple[When, ...] = ("always", "disagree", "never")


class Agent(BaseModel):
    """One node of the MAS: an id unique in the MAS, a role name, a backbone name, and when it runs.

    `when` (docs/mas.md#conditional-agents): "always" (the default, omitted in JSON); "disagree": only if
    its inputs' answers differ (or one failed or gave none), else it passes on the agreed answer at no
    cost, which makes a conditional decision agent a cascade; "never": it is never called and passes on
    its inputs' reliability-weighted vote (a free majority vote, as in self-consistency).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    role: str = Field(min_length=1)
    backbone: str = Field(min_length=1)
    when: When = "always"

    @property
    def name(self) -> str:
        return self.id

    @property
    def conditional(self) -> bool:
        """Whether the agent's inputs decide if it is called (it needs at least two of them)."""
        return self.when != "always"

    def to_json(self) -> dict[str, str]:
        """The public JSON form: `when` only when it is not "always", so old files read back unchanged."""
        document = {"id": self.id, "role": self.role, "backbone": self.backbone}
        if self.when != "always":
            document["when"] = self.when
        return document


class _MASDocument(BaseModel):
    """The public JSON form; unknown top-level keys are kept in `extra`."""

    model_config = ConfigDict(extra="allow")

    agents: list[Agent] = Field(min_length=1)
    edges: list[tuple[str, str]] = Field(default_factory=list)
    decision: str = Field(min_length=1)
    query_id: str | None = None
    pool: int | None = None


class MAS:
    """A validated DAG of agents whose decision agent's answer is the MAS answer."""

    def __init__(
        self,
        agents: Sequence[Agent],
        edges: Iterable[tuple[str, str]],
        decision: str,
        query_id: str | None = None,
        pool: int | None = None,
        extra: dict[str, Any] | None = None,
        source: str = "MAS",
    ) -> None:
        self.agents: tuple[Agent, ...] = tuple(agents)
        self.edges: tuple[tuple[str, str], ...] = tuple((str(a), str(b)) for a, b in edges)
        self.decision = decision
        self.query_id = query_id
        self.pool = pool
        self.extra: dict[str, Any] = dict(extra or {})
        self._validate(source)
        position = {agent.id: index for index, agent in enumerate(self.agents)}
        self._index(tuple(nx.lexicographical_topological_sort(self._graph(), key=position.__getitem__)))

    @classmethod
    def trusted(
        cls,
        agents: Sequence[Agent],
        edges: Iterable[tuple[str, str]],
        decision: str,
        order: Sequence[str],
        query_id: str | None = None,
        pool: int | None = None,
    ) -> MAS:
        """A MAS from code that guarantees validity by construction (the controller samples an order,
        then forward edges only), with that order as its topological order: no graph checks, so
        thousands can be built per second. Never use it for user input."""
        mas = cls.__new__(cls)
        mas.agents, mas.edges, mas.decision = tuple(agents), tuple(edges), decision
        mas.query_id, mas.pool, mas.extra = query_id, pool, {}
        mas._index(tuple(order))
        return mas

    @classmethod
    def single(cls, role: str, backbone: str, agent_id: str = "d") -> MAS:
        """One agent alone: the single-LLM baseline, and the cheapest valid MAS."""
        return cls.trusted([Agent(id=agent_id, role=role, backbone=backbone)], [], agent_id, order=[agent_id])

    def _index(self, order: tuple[str, ...]) -> None:
        self._by_id = {agent.id: agent for agent in self.agents}
        self._predecessors: dict[str, tuple[str, ...]] = {agent.id: () for agent in self.agents}
        self._successors: dict[str, tuple[str, ...]] = {agent.id: () for agent in self.agents}
        for src, dst in self.edges:
            self._predecessors[dst] += (src,)
            self._successors[src] += (dst,)
        self._order = order

    def _validate(self, source: str) -> None:
        if not self.agents:
            raise AgentBalanceError(f"{source}: a MAS needs at least one agent")
        require_unique_names([agent.id for agent in self.agents], source, "agents")
        ids = {agent.id for agent in self.agents}
        if self.decision not in ids:
            raise AgentBalanceError(f"{source}: decision agent {self.decision!r} is not one of the agents")
        seen: set[tuple[str, str]] = set()
        for index, (src, dst) in enumerate(self.edges):
            for end in (src, dst):
                if end not in ids:
                    raise AgentBalanceError(f"{source}: edge {index} [{src!r}, {dst!r}] names unknown agent {end!r}")
            if src == dst:
                raise AgentBalanceError(f"{source}: edge {index} is a self-loop on {src!r}")
            if (src, dst) in seen:
                raise AgentBalanceError(f"{source}: edge {index} [{src!r}, {dst!r}] is repeated")
            seen.add((src, dst))
        graph = self._graph()
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle:
            path = " -> ".join([str(edge[0]) for edge in cycle] + [str(cycle[0][0])])
            raise AgentBalanceError(f"{source}: the edges contain a cycle: {path}")
        if graph.out_degree(self.decision) > 0:
            raise AgentBalanceError(
                f"{source}: the decision agent {self.decision!r} has outgoing edges; it must be the last agent"
            )
        for agent in self.agents:
            inputs = sum(dst == agent.id for _, dst in self.edges)
            if agent.conditional and inputs < 2:
                raise AgentBalanceError(
                    f"{source}: agent {agent.id!r} has when={agent.when!r}, which compares its inputs' answers: "
                    f"it needs at least two inputs, found {inputs}"
                )
        feeding = nx.ancestors(graph, self.decision) | {self.decision}
        idle = [agent.id for agent in self.agents if agent.id not in feeding]
        if idle:
            raise AgentBalanceError(
                f"{source}: agent(s) {', '.join(idle)} do not reach the decision agent {self.decision!r}: "
                "they would cost without contributing"
            )

    def _graph(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_nodes_from(agent.id for agent in self.agents)
        graph.add_edges_from(self.edges)
        return graph

    # ---- views

    def __len__(self) -> int:
        return len(self.agents)

    def agent(self, agent_id: str) -> Agent:
        return self._by_id[agent_id]

    def predecessors(self, agent_id: str) -> tuple[str, ...]:
        """Incoming agents of `agent_id`, in edge order."""
        return self._predecessors[agent_id]

    def successors(self, agent_id: str) -> tuple[str, ...]:
        """Outgoing agents of `agent_id`, in edge order."""
        return self._successors[agent_id]

    def for_query(self, query_id: str | None) -> MAS:
        """This MAS labelled with a query's id: a copy sharing its agents, edges and order (no graph checks), as a
        MAS that serves every query is handed out."""
        return MAS.trusted(self.agents, self.edges, self.decision, order=self._order, query_id=query_id)

    def topological_order(self) -> tuple[str, ...]:
        """Agent ids, each after all its predecessors; ties kept in agent order (computed once)."""
        return self._order

    def to_networkx(self) -> nx.DiGraph:
        """A networkx DiGraph; nodes carry `role`, `backbone` and `decision` attributes."""
        graph = self._graph()
        for agent in self.agents:
            graph.nodes[agent.id].update(role=agent.role, backbone=agent.backbone, decision=agent.id == self.decision)
        return graph

    def depth(self) -> int:
        """Number of agents on the longest chain (1 for a lone decision agent): one pass in topological
        order, no graph built (every evaluation summary asks it of every MAS it measured)."""
        chain: dict[str, int] = {}
        for agent_id in self._order:
            chain[agent_id] = 1 + max((chain[src] for src in self._predecessors[agent_id]), default=0)
        return max(chain.values())

    def to_mermaid(self) -> str:
        """A mermaid flowchart: one box per agent (role, backbone), the decision agent double-boxed; the
        edges into a conditional agent are dashed, and its box says when it runs."""
        node = {agent.id: f"n{index}" for index, agent in enumerate(self.agents)}  # ids mermaid accepts
        lines = ["flowchart LR"]
        for agent in self.agents:
            condition = {"always": "", "disagree": "<br/>(if inputs disagree)", "never": "<br/>(vote, no call)"}
            # names are user data: a quote or a line break in one must not end the label or the statement
            text = f"{agent.id}: {agent.role}<br/>{agent.backbone}".replace('"', "'")
            label = " ".join(text.split()) + condition[agent.when]
            shape = f'[["{label}"]]' if agent.id == self.decision else f'["{label}"]'
            lines.append(f"    {node[agent.id]}{shape}")
        for src, dst in self.edges:
            arrow = "-.->" if self._by_id[dst].conditional else "-->"
            lines.append(f"    {node[src]} {arrow} {node[dst]}")
        return "\n".join(lines)

    @property
    def conditional(self) -> bool:
        """Whether some agent's inputs decide if it is called (the MAS's cost is then random)."""
        return any(agent.conditional for agent in self.agents)

    # ---- checks against the catalog and role library in use

    def check_against(self, catalog: Catalog, roles: RoleSet, source: str = "MAS") -> None:
        """Every backbone must be in the catalog and every role in the role library."""
        for agent in self.agents:
            if agent.backbone not in catalog:
                raise AgentBalanceError(
                    f"{source}: agent {agent.id!r} uses unknown backbone {agent.backbone!r} "
                    f"(catalog {catalog.source}; known: {', '.join(catalog.names)})"
                )
            if agent.role not in roles:
                raise AgentBalanceError(
                    f"{source}: agent {agent.id!r} uses unknown role {agent.role!r} "
                    f"(role library {roles.source}; known: {', '.join(roles.names)})"
                )

    # ---- JSON

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "query_id": self.query_id,
            "pool": self.pool,
            "agents": [agent.to_json() for agent in self.agents],
            "edges": [list(edge) for edge in self.edges],
            "decision": self.decision,
        }
        document.update(self.extra)
        return document

    @classmethod
    def from_json(cls, document: object, source: str = "MAS") -> MAS:
        """Build from the public JSON form; unknown keys are kept and written back."""
        if not isinstance(document, dict):
            raise AgentBalanceError(f"{source}: a MAS must be a JSON object, found {type(document).__name__}")
        try:
            parsed = _MASDocument.model_validate(document)
        except ValidationError as error:
            agents = document.get("agents")
            raise AgentBalanceError(describe_validation_error(error, source, agents, section="agents")) from None
        return cls(
            parsed.agents,
            parsed.edges,
            parsed.decision,
            query_id=parsed.query_id,
            pool=parsed.pool,
            extra=dict(parsed.model_extra or {}),
            source=source,
        )

    @classmethod
    def load(cls, path: str | Path) -> MAS:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise AgentBalanceError(f"MAS file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise AgentBalanceError(f"cannot read MAS file {path}: {error}") from None
        return cls.from_json(parse_json(text, str(path)), source=str(path))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MAS) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"MAS({len(self.agents)} agents, {len(self.edges)} edges, decision={self.decision!r})"
