"""The LLM-routing baselines (masrouter-, corl-, rlfocal-style): valid MAS, exact log-probabilities, reproducible
fits, one budget-conditioned CoRL model for every setting, and RL-Focal's focal diversity."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
import torch

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines._routing import Decisions, RoutingPolicy
from agentbalance.evaluation.baselines.base import PolicyGradientConfig, kappa_of, penalty_grid
from agentbalance.evaluation.baselines.corl import CoRLPolicy, CoRLStyle, budget_condition
from agentbalance.evaluation.baselines.masrouter import MODES, MasRouterPolicy, MasRouterStyle
from agentbalance.evaluation.baselines.rlfocal import FocalDiversityTable, RLFocalPolicy, RLFocalStyle, focal_diversity
from agentbalance.evaluation.methods import load_method
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.measuring import measure
from agentbalance.policy.context import BACKBONE_NUMERIC_FEATURES, ControllerContext
from agentbalance.templates import DEBATERS
from tests.conftest import assert_fit_is_reproducible, fitting_cache
from tests.test_baselines_learned_graph import METHODS as GRAPH_METHODS

METHODS = {"masrouter-style": MasRouterStyle, "corl-style": CoRLStyle, "rlfocal-style": RLFocalStyle}
SHORT = PolicyGradientConfig(epochs=3, batch_queries=16)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def fitted(small_experiment: Experiment) -> Callable[[str, str], list[MAS]]:
    return fitting_cache(small_experiment, METHODS, SHORT)


def tiny_context(roles: int = 3, backbones: int = 2, width: int = 16) -> ControllerContext:
    """A hand-made context small enough to enumerate every decision of a policy."""
    generator = torch.Generator().manual_seed(7)
    return ControllerContext(
        role_names=(*["Knowledgeable Expert", "Scientist", "Inspector"][: roles - 1], "Decision Maker"),
        decision_index=roles - 1,
        role_embeddings=torch.randn(roles, width, generator=generator),
        backbone_names=tuple(f"b{m}" for m in range(backbones)),
        profile_embeddings=torch.randn(backbones, 3, width, generator=generator),
        backbone_numeric=torch.randn(backbones, BACKBONE_NUMERIC_FEATURES, generator=generator),
        backbone_latency_s=torch.ones(backbones),
        backbone_tok_cost=torch.ones(backbones),
        pool_of_backbone=torch.zeros(backbones, dtype=torch.long),
        pool_count=1,
    )


def padded(values: list[int], length: int) -> list[int]:
    return values + [-1] * (length - len(values))


def masrouter_support(roles: int, backbones: int) -> list[dict[str, list[int]]]:
    """Every decision of the cascade: mode, number of other roles, their order, one backbone per agent."""
    others, support = roles - 1, []
    for mode, count in itertools.product(range(len(MODES)), range(roles)):
        if MODES[mode] == "debate" and count > DEBATERS:
            continue
        for order in itertools.permutations(range(others), count):
            for routed in itertools.product(range(backbones), repeat=count + 1):
                slots = [*padded(list(routed[:-1]), others), routed[-1]]
                support.append(
                    {"mode": [mode], "count": [count], "roles": padded(list(order), others), "backbones": slots}
                )
    return support


def corl_support(backbones: int) -> list[dict[str, list[int]]]:
    support = []
    for lead in range(backbones):
        for flags in itertools.product((0, 1), repeat=backbones - 1):
            row = list(flags)
            row.insert(lead, 0)
            support.append({"lead": [lead], "experts": row})
    return support


def rlfocal_support(backbones: int, max_size: int) -> list[dict[str, list[int]]]:
    support = []
    for size in range(1, max_size + 1):
        for members in itertools.permutations(range(backbones), size):
            for fusion in range(backbones) if size > 1 else [-1]:
                support.append({"size": [size - 1], "members": padded(list(members), max_size), "fusion": [fusion]})
    return support


def stacked(support: list[dict[str, list[int]]]) -> Decisions:
    """The support as one batch of decisions (one row per element)."""
    return {key: torch.tensor([row[key] for row in support]).squeeze(-1) for key in support[0]}


TINY_POLICIES = {
    "masrouter-style": (lambda: MasRouterPolicy(tiny_context(), seed=3), lambda: masrouter_support(3, 2)),
    "corl-style": (lambda: CoRLPolicy(tiny_context(backbones=3), seed=3, expert="Scientist"), lambda: corl_support(3)),
    "rlfocal-style": (
        lambda: RLFocalPolicy(tiny_context(backbones=3), seed=3, expert="Scientist", max_size=2),
        lambda: rlfocal_support(3, 2),
    ),
}


@pytest.mark.parametrize("name", [*METHODS, *GRAPH_METHODS])
def test_registry_names_the_class_and_settings_are_the_shared_penalty_grid(name: str, small_experiment) -> None:
    """Every learned baseline (routers here, learned graphs in test_baselines_learned_graph)."""
    method = load_method(name)
    assert isinstance(method, {**METHODS, **GRAPH_METHODS}[name]) and method.name == name
    assert method.settings(small_experiment, 5) == penalty_grid(small_experiment, 5)


def test_the_penalty_grid_spans_0_to_2_at_every_size(small_experiment) -> None:
    """Any sweep of two or more points reaches both ends of the documented range (kappa 0 and 2)."""
    for points in (2, 3, 8):
        grid = [kappa_of(setting) for setting in penalty_grid(small_experiment, points)]
        assert len(grid) == points and grid[0] == 0.0 and grid[-1] == pytest.approx(2.0)
    assert penalty_grid(small_experiment, 1) == ["kappa=0"]


@pytest.mark.parametrize("name", METHODS)
def test_every_test_query_gets_a_valid_mas_on_kept_backbones(name: str, small_experiment, fitted) -> None:
    experiment = small_experiment
    systems = fitted(name, "kappa=0.1")
    assert len(systems) == len(experiment.splits.test)
    for mas in systems:
        checked = MAS.from_json(mas.to_json())  # the validating constructor: acyclic, all reach the decision agent
        checked.check_against(experiment.world.catalog, experiment.roles)
        assert {agent.backbone for agent in mas.agents} <= set(experiment.kept)
        assert mas.agent(mas.decision).role == experiment.roles.decision.name
        assert set(mas.topological_order()) == {agent.id for agent in mas.agents}


@pytest.mark.parametrize("name", TINY_POLICIES)
def test_log_prob_of_every_decision_sums_to_one_over_the_enumerated_support(name: str) -> None:
    make_policy, make_support = TINY_POLICIES[name]
    policy: RoutingPolicy = make_policy()
    support = make_support()
    query = torch.randn(1, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        log_prob = policy.log_prob_of(query.expand(len(support), -1), stacked(support))
    assert torch.isfinite(log_prob).all()
    assert math.isclose(float(log_prob.exp().sum()), 1.0, abs_tol=1e-5)


@pytest.mark.parametrize("name", TINY_POLICIES)
def test_sampled_log_prob_is_the_log_prob_of_the_sampled_decisions(name: str) -> None:
    policy: RoutingPolicy = TINY_POLICIES[name][0]()
    queries = torch.randn(64, 16, generator=torch.Generator().manual_seed(2))
    step = policy.decide(queries, "sample")
    assert torch.allclose(step.log_prob, policy.log_prob_of(queries, step.decisions), atol=1e-5)
    assert (step.entropy >= 0).all()
    systems, log_prob, entropy = policy.sample(queries)
    assert len(systems) == 64 and log_prob.shape == entropy.shape == (64,) and log_prob.requires_grad


def test_masrouter_log_prob_is_the_product_of_the_cascade_probabilities() -> None:
    """One hand-traced decision: star mode, both other roles (second then first), backbones 1, 0 and 1."""
    policy = MasRouterPolicy(tiny_context(), seed=3)
    query = torch.randn(1, 16, generator=torch.Generator().manual_seed(1))
    decisions = stacked([{"mode": [2], "count": [2], "roles": [1, 0], "backbones": [1, 0, 1]}])
    with torch.no_grad():
        q = policy.query(query)
        p_mode = torch.softmax(policy.mode_head(q), 1)[0, 2]
        qm = torch.cat([q, policy.mode_embedding(torch.tensor([2]))], 1)
        p_count = torch.softmax(policy.count_head(qm), 1)[0, 2]
        others = policy.context.role_embeddings[policy.others]
        keys = policy.role_keys(others)
        first = torch.softmax(policy.role_state(torch.cat([qm, torch.zeros(1, 16)], 1)) @ keys.T / 8, 1)[0, 1]
        second = 1.0  # one role left
        vectors = policy.router.vectors(policy.context)
        routed = 1.0
        for role, backbone in ((policy.others[1], 1), (policy.others[0], 0), (2, 1)):
            features = torch.cat([qm, policy.context.role_embeddings[role].unsqueeze(0)], 1)
            routed *= torch.softmax(policy.router(features, vectors), 1)[0, backbone]
        expected = p_mode * p_count * first * second * routed
        assert MODES[2] == "star"
        assert math.isclose(float(policy.log_prob_of(query, decisions).exp()), float(expected), rel_tol=1e-5)


def test_masrouter_builds_the_chosen_mode_over_the_chosen_roles() -> None:
    policy = MasRouterPolicy(tiny_context(), seed=3)
    chain = policy.systems(
        stacked([{"mode": [MODES.index("chain")], "count": [2], "roles": [1, 0], "backbones": [1, 0, 1]}])
    )[0]
    assert [(a.id, a.role, a.backbone) for a in chain.agents] == [
        ("a1", "Scientist", "b1"),
        ("a0", "Knowledgeable Expert", "b0"),
        ("a2", "Decision Maker", "b1"),
    ]
    assert chain.edges == (("a1", "a0"), ("a0", "a2"))
    alone = policy.systems(stacked([{"mode": [0], "count": [0], "roles": [-1, -1], "backbones": [-1, -1, 0]}]))[0]
    assert [a.id for a in alone.agents] == ["a2"] and alone.edges == ()


@pytest.mark.parametrize("name", METHODS)
def test_the_same_setting_fitted_twice_gives_identical_mas(name: str, small_experiment, fitted) -> None:
    assert_fit_is_reproducible(METHODS[name](SHORT), small_experiment, "kappa=0.1", fitted(name, "kappa=0.1"))


@pytest.mark.parametrize("name", METHODS)
def test_a_malformed_setting_is_a_clear_error(name: str, small_experiment) -> None:
    for setting in ("fast", "kappa=-1", "kappa=nan"):
        with pytest.raises(AgentBalanceError, match="kappa"):
            METHODS[name](SHORT).fit(small_experiment, setting)


def test_corl_trains_once_and_a_higher_budget_penalty_builds_no_costlier_mas(small_experiment) -> None:
    experiment = small_experiment
    method = CoRLStyle(PolicyGradientConfig(epochs=8, batch_queries=16, learning_rate=1e-3))
    settings = penalty_grid(experiment, 4)
    constructors = {setting: method.fit(experiment, setting) for setting in settings}
    assert method.trainings == 1
    tok = {
        s: measure(experiment, c(experiment.splits.test), experiment.splits.test).tok for s, c in constructors.items()
    }
    assert tok[settings[-1]] <= tok[settings[0]] * 1.02 + 1e-9
    assert method.fit(experiment, settings[1])(experiment.splits.test) == constructors[settings[1]](
        experiment.splits.test
    )
    assert method.trainings == 1
    with pytest.raises(AgentBalanceError, match="outside the budget range"):
        method.fit(experiment, "kappa=50")


def test_corl_budget_condition_rises_with_kappa_and_is_finite_at_zero() -> None:
    conditions = [budget_condition(kappa_of(s)) for s in ("kappa=0", "kappa=0.02", "kappa=0.5", "kappa=2")]
    assert all(math.isfinite(c) for c in conditions) and conditions == sorted(conditions)


def test_focal_diversity_equals_the_hand_computed_value() -> None:
    correct = np.array([[0, 0, 1], [0, 1, 1], [0, 0, 0], [1, 0, 1], [1, 1, 0]], dtype=bool)
    # focal 0 fails items 1-3 with 2, 1, 3 members failing: p1 = 2/3, p2 = 4/9, GD = 1/3; focal 1 likewise;
    # focal 2 fails items 3 and 5 with 3 and 1 failing: p1 = 2/3, p2 = 1/2, GD = 1/4; mean = 11/36
    assert math.isclose(focal_diversity(correct), 11 / 36)
    twins = np.array([[0, 0], [1, 1], [0, 0]], dtype=bool)
    assert focal_diversity(twins) == 0.0  # they always fail together
    complementary = np.array([[0, 1], [1, 0], [1, 1]], dtype=bool)
    assert focal_diversity(complementary) == 1.0  # never fail together
    with pytest.raises(ValueError):
        focal_diversity(np.ones((3, 1), dtype=bool))


def test_focal_diversity_table_scores_ensembles_and_no_bonus_for_a_lone_backbone() -> None:
    correct = np.array([[0, 0, 1], [0, 1, 1], [0, 0, 0], [1, 0, 1], [1, 1, 0]], dtype=bool)
    table = FocalDiversityTable(correct, ["x", "y", "z"], max_size=3)
    assert math.isclose(table.of(["z", "x", "y"]), 11 / 36)
    assert math.isclose(table.of(["x", "y"]), focal_diversity(correct[:, [0, 1]]))
    assert table.of(["y"]) == 0.0


@pytest.mark.parametrize("name", TINY_POLICIES)
def test_a_trained_policy_routes_over_an_unseen_catalog_from_backbone_features(name: str) -> None:
    """No parameter depends on which backbones exist: swapping in a larger catalog's context just works."""
    policy: RoutingPolicy = TINY_POLICIES[name][0]()
    policy.context = tiny_context(backbones=5)
    systems = policy.greedy(torch.randn(8, 16, generator=torch.Generator().manual_seed(4)))
    assert all(agent.backbone in {f"b{m}" for m in range(5)} for mas in systems for agent in mas.agents)
    queries = torch.randn(8, 16, generator=torch.Generator().manual_seed(5))
    step = policy.decide(queries, "sample")
    assert torch.allclose(step.log_prob, policy.log_prob_of(queries, step.decisions), atol=1e-5)
