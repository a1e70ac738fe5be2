"""The untrained baselines: single LLM, fixed topologies (and the metrics' base MAS), random MAS."""

from __future__ import annotations

import dataclasses
import math
from itertools import pairwise

import networkx as nx
import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.fixed import FixedTopology, base_mas
from agentbalance.evaluation.baselines.random_mas import RandomMAS
from agentbalance.evaluation.baselines.single import SingleLLM
from agentbalance.evaluation.methods import load_method
from agentbalance.mas import MAS
from agentbalance.measuring import measure
from agentbalance.roles import Role, RoleKind, RoleSet
from agentbalance.templates import TOPOLOGIES, topology_mas

SIMPLE_METHODS = ("single", *TOPOLOGIES, "random")


def library(solvers: int) -> RoleSet:
    """`solvers` non-decision roles, then the decision role."""
    roles = [
        Role(name=f"Solver {i}", kind=RoleKind.SOLVER, description="solves", prompt="Solve.") for i in range(solvers)
    ]
    judge = Role(name="Judge", kind=RoleKind.DECISION, description="decides", prompt="Decide.")
    return RoleSet([*roles, judge])


def sinks(mas: MAS) -> list[str]:
    return [agent.id for agent in mas.agents if not mas.successors(agent.id)]


@pytest.mark.parametrize(
    ("kind", "agents", "edges"),
    [("complete", 8, 28), ("chain", 8, 7), ("star", 8, 7), ("layered", 8, 3 * 2 + 2 * 2 + 2), ("debate", 7, 9 + 3)],
)
def test_every_topology_has_its_shape_and_the_decision_agent_is_the_single_sink(
    kind: str, agents: int, edges: int
) -> None:
    mas = topology_mas(kind, library(7), "m")
    assert (len(mas), len(mas.edges)) == (agents, edges)
    assert sinks(mas) == [mas.decision] and mas.agent(mas.decision).role == "Judge"
    assert {agent.backbone for agent in mas.agents} == {"m"}
    MAS.from_json(mas.to_json())  # passes the full validation


def test_complete_chain_star_and_layered_use_every_role_once() -> None:
    for kind in ("complete", "chain", "star", "layered"):
        assert sorted(agent.role for agent in topology_mas(kind, library(7), "m").agents) == sorted(library(7).names)


def test_chain_is_one_path_and_star_feeds_only_the_decision_agent() -> None:
    chain, star = topology_mas("chain", library(4), "m"), topology_mas("star", library(4), "m")
    assert chain.depth() == 5
    assert star.depth() == 2 and all(dst == star.decision for _, dst in star.edges)


def test_layered_has_round_sqrt_n_layers_each_feeding_all_of_the_next() -> None:
    mas = topology_mas("layered", library(7), "m")  # 7 roles -> 3 layers of 3, 2, 2
    layers = list(nx.topological_generations(mas.to_networkx()))
    assert [len(layer) for layer in layers] == [3, 2, 2, 1]
    graph = mas.to_networkx()
    for up, down in pairwise(layers):
        assert all(graph.has_edge(a, b) for a in up for b in down)


def test_debate_has_two_rounds_of_the_same_three_roles() -> None:
    mas = topology_mas("debate", library(5), "m")
    first = [agent for agent in mas.agents if mas.predecessors(agent.id) == ()]
    second = [agent for agent in mas.agents if agent.id in mas.predecessors(mas.decision)]
    assert [a.role for a in first] == [a.role for a in second] == ["Solver 0", "Solver 1", "Solver 2"]
    assert {a.id for a in first}.isdisjoint({a.id for a in second})
    assert all(set(mas.predecessors(a.id)) == {f.id for f in first} for a in second)
    assert mas.depth() == 3


def test_debate_with_fewer_than_three_solvers_uses_them_all() -> None:
    assert len(topology_mas("debate", library(2), "m")) == 5


@pytest.mark.parametrize("kind", TOPOLOGIES)
def test_a_library_with_only_the_decision_role_gives_the_decision_agent_alone(kind: str) -> None:
    mas = topology_mas(kind, library(0), "m")
    assert (len(mas), mas.edges) == (1, ())


def test_an_unknown_topology_is_an_error() -> None:
    with pytest.raises(AgentBalanceError, match="unknown topology 'ring'"):
        FixedTopology("ring")
    with pytest.raises(AgentBalanceError, match="unknown topology"):
        topology_mas("ring", library(2), "m")


def test_base_mas_is_the_complete_graph_with_the_strongest_backbone_everywhere(small_experiment) -> None:
    mas = base_mas(small_experiment)
    assert {agent.backbone for agent in mas.agents} == {small_experiment.strongest_backbone()}
    assert len(mas) == len(small_experiment.roles)
    assert len(mas.edges) == len(mas) * (len(mas) - 1) // 2


def test_single_covers_every_backbone_of_the_catalog_and_fixed_topologies_the_kept_ones(small_experiment) -> None:
    catalog = small_experiment.world.catalog.names
    assert SingleLLM().settings(small_experiment, 3) == catalog  # catalog order, Pareto-kept or not
    assert set(catalog) > set(small_experiment.kept), "the small experiment drops some backbones"
    assert FixedTopology("star").settings(small_experiment, 3) == small_experiment.kept


def test_single_llm_runs_a_backbone_the_pareto_filter_dropped(small_experiment) -> None:
    dropped = next(name for name in small_experiment.world.catalog.names if name not in small_experiment.kept)
    (mas,) = SingleLLM().fit(small_experiment, dropped)(small_experiment.splits.test[:1])
    assert [agent.backbone for agent in mas.agents] == [dropped]
    with pytest.raises(AgentBalanceError, match="not a backbone kept by the Pareto filter"):
        FixedTopology("chain").fit(small_experiment, dropped)


def test_single_llm_is_the_decision_agent_alone_on_the_setting_backbone(small_experiment) -> None:
    backbone = small_experiment.kept[1]
    queries = small_experiment.splits.test[:3]
    systems = SingleLLM().fit(small_experiment, backbone)(queries)
    assert [mas.query_id for mas in systems] == [q.id for q in queries]
    for mas in systems:
        assert len(mas) == 1 and mas.agents[0].backbone == backbone
        assert mas.agents[0].role == small_experiment.roles.decision.name


def test_a_backbone_outside_the_catalog_is_not_a_setting(small_experiment) -> None:
    with pytest.raises(AgentBalanceError, match=r"single: setting 'no-such-model' is not a backbone of the world's"):
        SingleLLM().fit(small_experiment, "no-such-model")


def test_random_tiers_cover_the_pools_within_the_points(small_experiment) -> None:
    top = small_experiment.context.pool_count
    method = RandomMAS()
    assert method.settings(small_experiment, 50) == [f"tier={t}" for t in range(1, top + 1)]
    assert method.settings(small_experiment, 2) == ["tier=1", f"tier={top}"]
    assert method.settings(small_experiment, 1) == [f"tier={top}"]


@pytest.mark.parametrize("setting", ["tier=0", "tier=99", "tier=x", "kappa=1"])
def test_a_setting_that_is_not_a_tier_is_an_error(small_experiment, setting: str) -> None:
    with pytest.raises(AgentBalanceError, match="not a cost tier"):
        RandomMAS().fit(small_experiment, setting)


def test_random_mas_is_reproducible_for_a_seed_and_differs_across_seeds(small_experiment) -> None:
    queries = small_experiment.splits.test
    setting = RandomMAS().settings(small_experiment, 10)[-1]
    first = RandomMAS().fit(small_experiment, setting)(queries)
    again = RandomMAS().fit(small_experiment, setting)(list(reversed(queries)))
    assert first == list(reversed(again))  # a query's MAS depends on the query, not on its batch
    other_seed = dataclasses.replace(small_experiment, seed=small_experiment.seed + 1)
    assert RandomMAS().fit(other_seed, setting)(queries) != first
    assert len({tuple(mas.edges) for mas in first}) > 1  # and differs across queries


def test_random_mas_is_valid_and_draws_backbones_from_the_allowed_pools_only(small_experiment) -> None:
    context = small_experiment.context
    cheapest = {n for n, p in zip(context.backbone_names, context.pool_of_backbone.tolist(), strict=True) if p == 0}
    queries = small_experiment.splits.train
    low = RandomMAS().fit(small_experiment, "tier=1")(queries)
    high = RandomMAS().fit(small_experiment, f"tier={context.pool_count}")(queries)
    for cheap, rich in zip(low, high, strict=True):
        MAS.from_json(cheap.to_json())
        assert sinks(cheap) == [cheap.decision]
        assert {agent.backbone for agent in cheap.agents} <= cheapest
        assert cheap.edges == rich.edges  # backbones are drawn last: the structure is shared by the tiers
    assert len({agent.backbone for mas in high for agent in mas.agents}) > len(cheapest)


@pytest.mark.parametrize("name", SIMPLE_METHODS)
def test_every_simple_method_measures_finite_perf_tok_and_lat(small_experiment, name: str) -> None:
    method = load_method(name)
    assert method.name == name
    settings = method.settings(small_experiment, 3)
    queries = small_experiment.splits.test
    for setting in (settings[0], settings[-1]):
        evaluation = measure(small_experiment, method.fit(small_experiment, setting)(queries), queries)
        assert 0 <= evaluation.perf <= 1
        assert all(math.isfinite(x) and x > 0 for x in (evaluation.tok, evaluation.lat))


def test_the_base_mas_costs_more_than_the_cheapest_backbone_alone(small_experiment) -> None:
    queries = small_experiment.splits.test
    context = small_experiment.context
    cheapest = context.backbone_names[int(context.backbone_tok_cost.argmin())]
    single = measure(small_experiment, SingleLLM().fit(small_experiment, cheapest)(queries), queries)
    base = measure(small_experiment, [base_mas(small_experiment)] * len(queries), queries)
    assert base.tok > single.tok and base.lat > single.lat
