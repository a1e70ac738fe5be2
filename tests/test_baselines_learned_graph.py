"""The learned-topology baselines (agentprune-, agentdropout-, gdesigner-style): valid MAS, exact log-probabilities,
reproducible fits, and a cost knob that lowers cost."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines._graphs import GraphPolicy, LearnedGraphMethod, RoleGraph
from agentbalance.evaluation.baselines.agentdropout import AgentDropoutPolicy, AgentDropoutStyle
from agentbalance.evaluation.baselines.agentprune import PRUNING_RATIO, AgentPrunePolicy, AgentPruneStyle
from agentbalance.evaluation.baselines.base import PolicyGradientConfig, topology_backbone
from agentbalance.evaluation.baselines.gdesigner import GDesignerPolicy, GDesignerStyle
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.measuring import measure
from tests.conftest import assert_fit_is_reproducible, fitting_cache

METHODS = {
    "agentprune-style": AgentPruneStyle,
    "agentdropout-style": AgentDropoutStyle,
    "gdesigner-style": GDesignerStyle,
}
SHORT = PolicyGradientConfig(epochs=6, batch_queries=16)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def fitted(small_experiment: Experiment) -> Callable[[str, str], list[MAS]]:
    return fitting_cache(small_experiment, METHODS, SHORT)


@pytest.mark.parametrize("name", METHODS)
def test_every_test_query_gets_a_valid_mas_on_the_shared_backbone(name: str, fitted, small_experiment) -> None:
    backbone = topology_backbone(small_experiment)
    for setting in ("kappa=0", "kappa=0.02"):
        systems = fitted(name, setting)
        assert len(systems) == len(small_experiment.splits.test)
        for mas in systems:
            checked = MAS.from_json(mas.to_json())  # the full validation the trusted path skipped
            checked.check_against(small_experiment.world.catalog, small_experiment.roles)
            assert checked.agent(checked.decision).role == small_experiment.roles.decision.name
            assert {agent.backbone for agent in checked.agents} == {backbone}
            assert checked.topological_order()[-1] == checked.decision


def test_topology_backbone_is_the_strongest_of_the_cheaper_half(small_experiment) -> None:
    triples = small_experiment.pools.triples.loc[small_experiment.kept]
    median = triples["tok_cost"].median()
    chosen = topology_backbone(small_experiment)
    assert chosen in small_experiment.kept and triples.at[chosen, "tok_cost"] <= median
    assert triples.at[chosen, "perf"] == triples.loc[triples["tok_cost"] <= median, "perf"].max()


def test_agents_without_a_path_to_the_decision_agent_are_dropped() -> None:
    graph = RoleGraph(["A", "B", "Decider", "C"], decision_index=2, backbone="m")  # positions A, B, C, Decider
    assert [agent.role for agent in graph.agents] == ["A", "B", "C", "Decider"]
    edges = {pair: False for pair in graph.pairs}
    edges[0, 1] = edges[1, 3] = edges[0, 2] = True  # A -> B -> Decider; A -> C, but C reaches nothing
    mas = graph.mas(None, [edges[pair] for pair in graph.pairs])
    assert [agent.role for agent in mas.agents] == ["A", "B", "Decider"]
    assert mas.edges == (("a0", "a1"), ("a1", "a2"))
    dropped_b = graph.mas([True, False, True], [edges[pair] for pair in graph.pairs])
    assert [agent.role for agent in dropped_b.agents] == ["Decider"] and dropped_b.edges == ()


def _tiny_policies(graph: RoleGraph, width: int) -> list[GraphPolicy]:
    torch.manual_seed(3)
    prune = AgentPrunePolicy(graph, seed=0)
    with torch.no_grad():
        prune.edge_logits.copy_(torch.tensor([1.5, -0.5, 0.2]))
    prune.prune(PRUNING_RATIO)  # cuts the lowest-probability edge: never drawn, never counted
    dropout = AgentDropoutPolicy(graph, width, seed=0)
    with torch.no_grad():
        dropout.head[-1].bias.copy_(torch.tensor([0.7, -1.2, 0.4, 1.0, -0.3]))
    return [prune, dropout, GDesignerPolicy(graph, torch.randn(3, width), width, seed=0)]


def test_log_prob_is_the_bernoulli_likelihood_of_the_sampled_decisions() -> None:
    graph = RoleGraph(["Solver", "Critic", "Decider"], decision_index=2, backbone="m")
    queries = torch.randn(64, 8)
    for policy in _tiny_policies(graph, 8):
        policy.generator.manual_seed(11)
        decisions = policy.decide(queries, greedy=False)
        policy.generator.manual_seed(11)
        _, log_prob, _ = policy.sample(queries)
        assert torch.allclose(log_prob, decisions.log_prob)
        keep_logits, edge_logits = policy.logits(queries)
        for row in range(len(queries)):
            expected = 0.0
            variables = [(edge_logits[row], decisions.edges[row], policy.allowed)]
            if keep_logits is not None:
                variables.append((keep_logits[row], decisions.keep[row], torch.ones(len(keep_logits[row]), dtype=bool)))
            for logits, drawn, allowed in variables:
                for logit, x, free in zip(logits.tolist(), drawn.tolist(), allowed.tolist(), strict=True):
                    p = 1 / (1 + math.exp(-logit))
                    if free:
                        expected += math.log(p if x else 1 - p)
                    else:
                        assert not x
            assert decisions.log_prob[row].item() == pytest.approx(expected, abs=1e-5)
    pruned = _tiny_policies(graph, 8)[0]
    assert pruned.allowed.tolist() == [True, False, True]


@pytest.mark.parametrize("name", METHODS)
def test_the_same_setting_fitted_twice_gives_identical_mas(name: str, fitted, small_experiment) -> None:
    assert_fit_is_reproducible(METHODS[name](SHORT), small_experiment, "kappa=0.02", fitted(name, "kappa=0.02"))


@pytest.mark.parametrize("name", METHODS)
def test_a_higher_kappa_is_no_more_expensive(name: str, fitted, small_experiment) -> None:
    test = small_experiment.splits.test
    free = measure(small_experiment, fitted(name, "kappa=0"), test)
    costly = measure(small_experiment, fitted(name, "kappa=2"), test)
    assert costly.tok <= free.tok * 1.05 + 1e-9
    assert costly.lat <= free.lat * 1.05 + 1e-9


def test_agentprune_keeps_at_most_the_unpruned_fraction_of_edges(fitted, small_experiment) -> None:
    edge_count = RoleGraph.of(small_experiment).edge_count
    assert all(
        len(m.edges) <= edge_count - math.floor(PRUNING_RATIO * edge_count)
        for m in fitted("agentprune-style", "kappa=0")
    )


@pytest.mark.parametrize("setting", ["lambda=1", "kappa=-1", "kappa=nan"])
def test_a_setting_that_is_not_a_valid_kappa_is_rejected(setting: str, small_experiment) -> None:
    method: LearnedGraphMethod = AgentDropoutStyle(SHORT)
    with pytest.raises(AgentBalanceError, match="kappa"):
        method.fit(small_experiment, setting)
