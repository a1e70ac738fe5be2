"""MAS templates over a role library: the whole library on one backbone, wired as a complete graph,
chain, star, layered graph or two-round debate.

The fixed-topology baselines are these templates; `build` also starts training from the best of them
that fits a budget (`Trainer.anchor`). Each graph is built with full validation (`MAS(...)`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import combinations_with_replacement, pairwise

import numpy as np

from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.roles import RoleKind, RoleSet

# LLM-Debate (Du et al., 2023) uses three debaters over two rounds; more debaters would make the debate
# the costliest baseline by far (every second-round agent reads every first-round answer).
DEBATERS = 3
VOTE_SAMPLES = (3, 5)  # the majority votes every menu and the self-consistency baseline sweep

Node = tuple[int, int]  # (role index in the library, debate round)
Edges = list[tuple[Node, Node]]


def single_mas(roles: RoleSet, backbone: str) -> MAS:
    """The decision role answering alone on `backbone` (the single-LLM baseline; a served model's last resort)."""
    index = roles.names.index(roles.decision.name)
    return MAS.single(roles.decision.name, backbone, agent_id((index, 1)))


def agent_id(node: Node) -> str:
    """Agent ids follow the controller's (`a<role index>`); a debate's second round adds `.r2`."""
    role, round_number = node
    return f"a{role}" if round_number == 1 else f"a{role}.r{round_number}"


def _complete(others: list[int], decision: int) -> Edges:
    """Every earlier agent feeds every later one, library order, the decision agent last."""
    order = [(role, 1) for role in [*others, decision]]
    return [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]


def _chain(others: list[int], decision: int) -> Edges:
    order = [(role, 1) for role in [*others, decision]]
    return list(pairwise(order))


def _star(others: list[int], decision: int) -> Edges:
    return [((role, 1), (decision, 1)) for role in others]


def _layered(others: list[int], decision: int) -> Edges:
    """round(sqrt(n)) layers of near-equal width (wider first), each feeding all of the next."""
    if not others:
        return []
    widths = np.array_split(np.arange(len(others)), max(1, round(math.sqrt(len(others)))))
    layers = [[(others[i], 1) for i in width] for width in widths] + [[(decision, 1)]]
    return [(a, b) for up, down in pairwise(layers) for a in up for b in down]


def _debate(others: list[int], decision: int) -> Edges:
    """The first DEBATERS non-decision roles answer; each answers again after reading every first
    answer (its own included); the second answers feed the decision agent."""
    debaters = others[:DEBATERS]
    first_round = [((a, 1), (b, 2)) for a in debaters for b in debaters]
    return first_round + [((b, 2), (decision, 1)) for b in debaters]


TOPOLOGIES: dict[str, Callable[[list[int], int], Edges]] = {
    "complete": _complete,
    "chain": _chain,
    "star": _star,
    "layered": _layered,
    "debate": _debate,
}


def topology_mas(kind: str, roles: RoleSet, backbone: str) -> MAS:
    """The role library (every role once; the debate's debaters twice) wired as `kind`, all on `backbone`."""
    if kind not in TOPOLOGIES:
        raise AgentBalanceError(f"unknown topology {kind!r}; known: {', '.join(TOPOLOGIES)}")
    names = roles.names
    decision = names.index(roles.decision.name)
    others = [index for index in range(len(names)) if index != decision]
    edges = TOPOLOGIES[kind](others, decision)
    wired = {node for edge in edges for node in edge} - {(decision, 1)}
    nodes = [*sorted(wired, key=lambda node: (node[1], node[0])), (decision, 1)]  # by round, library order
    agents = [Agent(id=agent_id(node), role=names[node[0]], backbone=backbone) for node in nodes]
    return MAS(
        agents,
        [(agent_id(a), agent_id(b)) for a, b in edges],
        agent_id((decision, 1)),
        source=f"{kind} topology on {backbone}",
    )


# ----------------------------------------------------------------------------- agreement cascades and votes


def answerer_roles(roles: RoleSet, count: int) -> list[int]:
    """Indices of `count` answering roles: the library's solvers in library order (other non-decision roles
    if there are too few), repeated in turn when `count` exceeds them."""
    solvers = [i for i, role in enumerate(roles.roles) if role.kind is RoleKind.SOLVER]
    pool = solvers or [i for i, role in enumerate(roles.roles) if role.kind is not RoleKind.DECISION]
    if not pool:
        raise AgentBalanceError(f"{roles.source}: a cascade or vote needs a role besides the decision role")
    return [pool[k % len(pool)] for k in range(count)]


def _answerer_nodes(roles: RoleSet, count: int) -> list[Node]:
    """The answerers as nodes: a role's first use is round 1, its repeats rounds 2, 3, ... (distinct ids)."""
    seen: dict[int, int] = {}
    nodes = []
    for role in answerer_roles(roles, count):
        seen[role] = seen.get(role, 0) + 1
        nodes.append((role, seen[role]))
    return nodes


def cascade_backbones(names: Sequence[str]) -> list[tuple[tuple[str, str], str]]:
    """Every (answerers, escalation) of an agreement cascade over `names`: each pair of backbones, one
    backbone twice included (two of its samples), and each other backbone as the escalation."""
    return [
        (answerers, escalation)
        for answerers in combinations_with_replacement(names, 2)
        for escalation in names
        if escalation not in answerers
    ]


def cascade_mas(roles: RoleSet, answerers: tuple[str, str], escalation: str) -> MAS:
    """An agreement cascade (FrugalGPT, MoT): two answerers on `answerers` (the same backbone twice means two
    samples of it) and the decision role on `escalation`, called only when their answers differ."""
    names, decision = roles.names, roles.names.index(roles.decision.name)
    nodes = _answerer_nodes(roles, 2)
    agents = [Agent(id=agent_id(n), role=names[n[0]], backbone=b) for n, b in zip(nodes, answerers, strict=True)]
    agents.append(Agent(id=agent_id((decision, 1)), role=roles.decision.name, backbone=escalation, when="disagree"))
    edges = [(agent.id, agents[-1].id) for agent in agents[:-1]]
    return MAS(agents, edges, agents[-1].id, source=f"cascade {'+'.join(answerers)} -> {escalation}")


def vote_mas(roles: RoleSet, backbone: str, samples: int) -> MAS:
    """Self-consistency: `samples` answerers on one backbone and a free majority vote over them (the decision
    role with `when="never"`: it makes no call)."""
    if samples < 2:
        raise AgentBalanceError(f"a vote needs at least two samples, got {samples}")
    names, decision = roles.names, roles.names.index(roles.decision.name)
    agents = [Agent(id=agent_id(n), role=names[n[0]], backbone=backbone) for n in _answerer_nodes(roles, samples)]
    agents.append(Agent(id=agent_id((decision, 1)), role=roles.decision.name, backbone=backbone, when="never"))
    edges = [(agent.id, agents[-1].id) for agent in agents[:-1]]
    return MAS(agents, edges, agents[-1].id, source=f"{samples} samples of {backbone}, majority vote")
