"""The plans a practitioner picks on validation (`single-val`: a backbone alone; `plan-menu`: a backbone alone, an
agreement cascade or a vote, the best that fits each budget level on validation) and `self-consistency` (k answers
of one backbone, a free majority vote)."""

from __future__ import annotations

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines.menu import (
    SingleOnValidation,
    ValidatedPlans,
    best_fitting,
    budget_levels,
    menu_plans,
    single_plans,
)
from agentbalance.evaluation.baselines.self_consistency import SelfConsistency
from agentbalance.evaluation.methods import load_method, parse_methods
from agentbalance.experiment import Experiment
from agentbalance.measuring import measure
from agentbalance.roles import RoleSet
from agentbalance.templates import cascade_backbones, cascade_mas, vote_mas


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


def test_the_validated_plans_and_self_consistency_are_methods_of_curve_and_of_all() -> None:
    assert {"single-val", "plan-menu", "self-consistency"} <= set(parse_methods("all"))
    assert isinstance(load_method("single-val"), SingleOnValidation)
    assert isinstance(load_method("plan-menu"), ValidatedPlans)
    assert isinstance(load_method("self-consistency"), SelfConsistency)
    with pytest.raises(AgentBalanceError, match="unknown method"):
        parse_methods("cascade-style")  # folded into plan-menu: a cascade-only menu has no point at tight budgets


def test_the_menu_holds_every_backbone_alone_every_cascade_and_every_vote(small_experiment: Experiment) -> None:
    names = list(small_experiment.world.catalog.names)
    plans = dict(menu_plans(small_experiment))
    assert len(plans) == len(names) + len(cascade_backbones(names)) + 2 * len(names)
    assert [name for name, _ in single_plans(small_experiment)] == names
    for name, mas in plans.items():
        backbones = [agent.backbone for agent in mas.agents]
        if "->" in name:
            first, second, escalation = backbones
            assert name == f"{first}+{second}->{escalation}" and escalation not in (first, second)
            assert mas.agent(mas.decision).when == "disagree"
        elif " x" in name:
            assert len(set(backbones)) == 1 and mas.agent(mas.decision).when == "never"
        else:
            assert backbones == [name]


# one of each for the module: each measures its menu once per experiment (the plans' calls are the slow part)
SINGLE_VAL, PLAN_MENU = SingleOnValidation(), ValidatedPlans()


@pytest.mark.parametrize("method", [SINGLE_VAL, PLAN_MENU], ids=lambda m: m.name)
def test_each_level_takes_the_best_plan_on_validation_that_fits_there(
    small_experiment: Experiment, method: ValidatedPlans
) -> None:
    plans, ceilings = method.measured(small_experiment)
    val = small_experiment.splits.val
    for plan in list(plans.values())[:: max(1, len(plans) // 12)]:  # a sample: measured as `measure` runs it
        assert plan.validation == measure(small_experiment, [plan.mas] * len(val), val)
    settings = method.settings(small_experiment, 4)
    assert 1 <= len(settings) <= 2 * 4 and len(set(settings)) == len(settings)
    expected = []
    for axis in ("tok", "lat"):
        for level in budget_levels(list(plans.values()), ceilings[axis], axis, 4):
            fitting = [p for p in plans.values() if getattr(p.validation, axis) <= level * (1 + 1e-12)]
            best = max(p.validation.perf for p in fitting)
            chosen = best_fitting(list(plans.values()), axis, float(level))
            assert chosen is not None and chosen.validation.perf == best and chosen.name in settings
            expected.append(chosen.name)
    assert settings == list(dict.fromkeys(expected))
    test = small_experiment.splits.test
    built = method.fit(small_experiment, settings[-1])(test)
    assert [m.query_id for m in built] == [q.id for q in test]
    with pytest.raises(AgentBalanceError, match="not a plan of this menu"):
        method.fit(small_experiment, "a+b->c")


def test_the_menu_is_never_worse_on_validation_than_a_backbone_alone(small_experiment: Experiment) -> None:
    singles, _ = SINGLE_VAL.measured(small_experiment)
    menu, ceilings = PLAN_MENU.measured(small_experiment)
    for level in budget_levels(list(menu.values()), ceilings["tok"], "tok", 6):
        alone = best_fitting(list(singles.values()), "tok", level)
        planned = best_fitting(list(menu.values()), "tok", level)
        if alone is not None:
            assert planned is not None and planned.validation.perf >= alone.validation.perf


def test_budget_levels_span_the_cheapest_plan_to_the_ceiling() -> None:
    assert list(budget_levels([], 2.0, "tok", 3)) == [2.0, 2.0, 2.0]
    with pytest.raises(AgentBalanceError, match="at least 1"):
        ValidatedPlans().settings(None, 0)  # type: ignore[arg-type]


def test_self_consistency_sweeps_every_backbone_with_three_and_five_samples(small_experiment: Experiment) -> None:
    method = SelfConsistency()
    settings = method.settings(small_experiment, 4)
    assert len(settings) == 2 * len(small_experiment.world.catalog)
    test = small_experiment.splits.test[:8]
    (mas, *_) = method.fit(small_experiment, settings[1])(test)
    assert len(mas) == 6 and mas.agent(mas.decision).when == "never"
    with pytest.raises(AgentBalanceError, match="unknown setting"):
        method.fit(small_experiment, "qwen3-8b x4")
