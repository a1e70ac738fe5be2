"""The agreement baselines: `cascade-style` (two answerers, a stronger backbone only on disagreement, chosen per
budget on validation) and `self-consistency` (k answers of one backbone, a free majority vote)."""

from __future__ import annotations

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.cascade import CascadeStyle, all_cascades, validation_frontier
from agentbalance.evaluation.baselines.self_consistency import SelfConsistency
from agentbalance.evaluation.measure import measure
from agentbalance.evaluation.methods import load_method, parse_methods
from agentbalance.experiment import Experiment
from agentbalance.roles import RoleSet
from agentbalance.templates import cascade_mas, vote_mas


def test_the_templates_are_a_cascade_and_a_free_vote() -> None:
    roles = RoleSet.load("math")
    cascade = cascade_mas(roles, ("cheap", "cheap"), "strong")
    assert [a.backbone for a in cascade.agents] == ["cheap", "cheap", "strong"]
    assert [a.when for a in cascade.agents] == ["always", "always", "disagree"]
    assert cascade.agent(cascade.decision).role == roles.decision.name and len(cascade.edges) == 2
    vote = vote_mas(RoleSet.load("code"), "m", 5)  # 4 solvers in the code library: one serves twice
    assert len(vote) == 6 and vote.agent(vote.decision).when == "never" and len({a.id for a in vote.agents}) == 6
    with pytest.raises(AgentBalanceError, match="at least two samples"):
        vote_mas(roles, "m", 1)


def test_both_are_methods_of_curve_and_of_all() -> None:
    assert {"cascade-style", "self-consistency"} <= set(parse_methods("all"))
    assert isinstance(load_method("cascade-style"), CascadeStyle)
    assert isinstance(load_method("self-consistency"), SelfConsistency)


def test_cascades_escalate_only_to_a_backbone_stronger_alone_on_validation(small_experiment: Experiment) -> None:
    cascades = dict(all_cascades(small_experiment))
    names = list(small_experiment.world.catalog.names)
    assert len(cascades) > len(names)  # pairs (a backbone twice included) times stronger third backbones
    for name, mas in cascades.items():
        first, second, escalation = (agent.backbone for agent in mas.agents)
        assert name == f"{first}+{second}->{escalation}" and escalation not in (first, second)


def test_cascade_style_picks_per_budget_the_best_that_fits_on_validation(small_experiment: Experiment) -> None:
    method = CascadeStyle()
    settings = method.settings(small_experiment, 4)
    measured = method.measured(small_experiment)
    assert 1 <= len(settings) <= 4 and len(set(settings)) == len(settings)
    chosen = [measured[name].validation for name in settings]
    assert [e.tok_upper for e in chosen] == sorted(e.tok_upper for e in chosen)  # cheapest budget first
    cheapest = min(measured.values(), key=lambda c: c.validation.tok_upper)
    affordable = [c for c in measured.values() if c.validation.tok_upper <= cheapest.validation.tok_upper]
    assert chosen[0].perf == max(c.validation.perf for c in affordable)
    assert validation_frontier(list(measured.values()), 1)[0].validation.perf == max(
        c.validation.perf for c in measured.values()
    )  # one level: the loosest budget, so the best cascade of all
    test = small_experiment.splits.test
    built = method.fit(small_experiment, settings[-1])(test)
    assert [m.query_id for m in built] == [q.id for q in test]
    evaluation = measure(small_experiment, built, test)
    assert 0 <= evaluation.escalation_rate <= 1 and evaluation.n == len(test)
    with pytest.raises(AgentBalanceError, match="not a cascade"):
        method.fit(small_experiment, "a+b->c")


def test_self_consistency_sweeps_every_backbone_with_three_and_five_samples(small_experiment: Experiment) -> None:
    method = SelfConsistency()
    settings = method.settings(small_experiment, 4)
    assert len(settings) == 2 * len(small_experiment.world.catalog)
    test = small_experiment.splits.test[:8]
    (mas, *_) = method.fit(small_experiment, settings[1])(test)
    assert len(mas) == 6 and mas.agent(mas.decision).when == "never"
    with pytest.raises(AgentBalanceError, match="unknown setting"):
        method.fit(small_experiment, "qwen3-8b x4")
