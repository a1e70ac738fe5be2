"""The anchored start: training begins from the best MAS template that fits each budget (a backbone alone,
or the role library on one backbone as a chain, star or layers), and a trained policy replaces it only
when it wins on validation by more than one standard error."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.mas import MAS
from agentbalance.measuring import CONFIDENCE_Z, Evaluation, measure, summarise
from agentbalance.policy.budget_input import budget_condition, conditions
from agentbalance.policy.controller import Controller, ControllerConfig
from agentbalance.policy.sampling import seeded
from agentbalance.query import Query
from agentbalance.runtime.rollout import Outcome
from agentbalance.templates import cascade_mas, topology_mas, vote_mas
from agentbalance.train import anchor as anchor_module
from agentbalance.train.anchor import ANCHOR_TOPOLOGIES, anchor_templates
from agentbalance.train.budget_targeting import best_delta, budget_preference, selection_key, spend_slack, sweep_delta
from agentbalance.train.build import BuildSpec, build, train_on
from agentbalance.train.config import TrainConfig
from agentbalance.train.reinforce import Trainer
from agentbalance.train.training_run import TrainingRun

pytestmark = pytest.mark.slow  # builds, trains or sweeps: left out of `make test-fast`


def _trainer(experiment: Experiment, budgets: BudgetRange | Budget, config: TrainConfig) -> Trainer:
    """A trainer for a budget range, or for one budget; its initial weights seeded as `build` seeds them (torch's
    global random state differs with what the process did before, e.g. whether the encoder model was loaded)."""
    with seeded(0):
        controller = Controller(experiment.context)
    return Trainer(TrainingRun.of(experiment, controller, budgets, config))


def _templates(experiment: Experiment) -> list[MAS]:
    decision = experiment.roles.decision.name
    kept = experiment.kept
    cascades = [
        cascade_mas(experiment.roles, (a, b), c)
        for a, b in itertools.combinations_with_replacement(kept, 2)
        for c in kept
        if c not in (a, b)
    ]
    return (
        [MAS.single(decision, name) for name in kept]
        + [topology_mas(kind, experiment.roles, name) for kind in ANCHOR_TOPOLOGIES for name in kept]
        + cascades
    )


def _best_fitting_template(measured: list[tuple[MAS, Evaluation]], budget: Budget) -> MAS:
    """Independently of the trainer: the template with the best Perf on the training and validation
    questions whose upper cost bounds meet `budget` (the smallest excess when none does)."""
    fitting = [(mas, e) for mas, e in measured if e.meets(budget)]
    if not fitting:
        return min(measured, key=lambda item: item[1].excess(budget))[0]
    return max(fitting, key=lambda item: (item[1].perf, -item[1].tok))[0]


def _pair_key(mas: MAS, query: Query) -> tuple[object, ...]:
    return mas.agents, mas.edges, mas.decision, query.id


@pytest.fixture(scope="module")
def template_outcomes(small_experiment) -> dict[tuple[object, ...], Outcome]:
    """Every template's outcome on every training and validation question, measured once (one batch)."""
    questions = small_experiment.splits.train + small_experiment.splits.val
    pairs = [(mas, q) for mas in _templates(small_experiment) for q in questions]
    outcomes = small_experiment.execute(pairs)
    return {_pair_key(mas, q): outcome for (mas, q), outcome in zip(pairs, outcomes, strict=True)}


@pytest.fixture(scope="module")
def measured_templates(small_experiment, template_outcomes) -> list[tuple[MAS, Evaluation]]:
    """Every template summarised on the training and validation questions."""
    questions = small_experiment.splits.train + small_experiment.splits.val
    n = len(questions)
    return [
        (mas, summarise([mas] * n, [template_outcomes[_pair_key(mas, q)] for q in questions], CONFIDENCE_Z))
        for mas in _templates(small_experiment)
    ]


def _replaying(experiment: Experiment, recorded: dict[tuple[object, ...], Outcome]) -> Experiment:
    """`experiment` whose `execute` takes the outcomes `recorded` holds from there and runs only the other pairs:
    the simulated world is a pure function of the MAS and the question, in any batch and any order, so every
    pair still gets the outcome the world gives it; the templates are just not measured again."""

    def execute(pairs: Sequence[tuple[MAS, Query]]) -> list[Outcome]:
        keys = [_pair_key(mas, query) for mas, query in pairs]
        others = [pair for pair, key in zip(pairs, keys, strict=True) if key not in recorded]
        ran = iter(experiment.execute(others) if others else [])
        return [recorded[key] if key in recorded else next(ran) for key in keys]

    replayed = dataclasses.replace(experiment)
    replayed.execute = execute  # type: ignore[method-assign]
    return replayed


def _shape(mas: MAS) -> tuple[object, ...]:
    """A MAS up to agent ids: who (role, backbone) feeds whom, and who decides."""
    role = {agent.id: agent.role for agent in mas.agents}
    edges = frozenset((role[a], role[b]) for a, b in mas.edges)
    return frozenset((a.role, a.backbone, a.when) for a in mas.agents), edges, role[mas.decision]


@pytest.mark.parametrize("kind", ["single", *ANCHOR_TOPOLOGIES])
def test_every_anchor_template_is_a_decision_of_the_controller(small_experiment, kind: str) -> None:
    controller = Controller(small_experiment.context)
    for name in small_experiment.kept:
        roles = small_experiment.roles
        mas = MAS.single(roles.decision.name, name) if kind == "single" else topology_mas(kind, roles, name)
        decisions = controller.decisions_of([mas, mas])
        assert [_shape(built) for built in controller.to_masses(decisions)] == [_shape(mas)] * 2
        step = controller(small_experiment.embed(small_experiment.splits.val[:2]), mode="given", given=decisions)
        assert torch.isfinite(step.log_prob).all()


def test_every_cascade_template_is_a_decision_of_the_controller(small_experiment) -> None:
    """Cheap answerers from any pools escalating to a stronger backbone: the controller builds each one."""
    controller = Controller(small_experiment.context)
    run = TrainingRun.of(small_experiment, controller, Budget(tok=1.0), TrainConfig())
    cascades = [mas for mas in anchor_templates(run) if mas.conditional]
    pools = {small_experiment.pools.pool_of(a.backbone) for mas in cascades for a in mas.agents[:-1]}
    assert len(cascades) >= len(small_experiment.kept) and len(pools) > 1
    decisions = controller.decisions_of(cascades)
    assert [_shape(built) for built in controller.to_masses(decisions)] == [_shape(mas) for mas in cascades]
    queries = small_experiment.splits.val[:1] * len(cascades)
    step = controller(small_experiment.embed(queries), mode="given", given=decisions)
    assert torch.isfinite(step.log_prob).all()
    assert bool(decisions.conditional.any(dim=1).all())


@pytest.mark.parametrize("ablation", ["one-pool", "no-escalation", None])
def test_the_templates_are_those_the_controller_may_construct(small_experiment, ablation: str | None) -> None:
    """A pool cap or an ablation removes the templates the controller could never build."""
    kept = small_experiment.kept
    config = ControllerConfig(ablation=ablation, max_pool=None if ablation else 1)
    run = TrainingRun.of(small_experiment, Controller(small_experiment.context, config), Budget(tok=1.0), TrainConfig())
    templates = anchor_templates(run)
    pool = small_experiment.pools.pool_of
    cross_pool = [m for m in templates if len({pool(a.backbone) for a in m.agents}) > 1]
    if ablation is None:  # capped at pool 1
        assert all(pool(a.backbone) <= 1 for m in templates for a in m.agents) and cross_pool
        assert len({a.backbone for m in templates for a in m.agents}) < len(kept)
    elif ablation == "one-pool":
        assert not cross_pool and any(m.conditional for m in templates)
    else:
        assert not any(m.conditional for m in templates) and len(templates) == 4 * len(kept)


def test_a_mas_the_controller_cannot_construct_is_refused_with_the_reason(small_experiment) -> None:
    controller = Controller(small_experiment.context)
    complete = topology_mas("complete", small_experiment.roles, small_experiment.kept[0])
    with pytest.raises(AgentBalanceError, match="other than the sinks feed the decision agent"):
        controller.decisions_of([complete])
    vote = vote_mas(small_experiment.roles, small_experiment.kept[0], 3)
    with pytest.raises(AgentBalanceError, match="vote agent"):
        controller.decisions_of([vote])
    unknown = MAS.single(small_experiment.roles.decision.name, "no-such-model")
    with pytest.raises(AgentBalanceError, match="backbone 'no-such-model'"):
        controller.decisions_of([unknown])


def test_the_anchored_start_is_the_best_template_that_fits_each_budget(
    small_experiment, template_outcomes, measured_templates, one_thread
) -> None:
    """Per target the plan is the best fitting template, or a mixture of two that fits and beats it."""
    val = small_experiment.splits.val
    strongest = small_experiment.strongest_backbone()
    chain = measure(small_experiment, [topology_mas("chain", small_experiment.roles, strongest)] * len(val), val)
    budget_range = BudgetRange(Budget(chain.tok_upper * 1.2, chain.lat_upper * 1.2), ratio=1000, steps=3)
    trainer = _trainer(_replaying(small_experiment, template_outcomes), budget_range, TrainConfig())
    plans = trainer.anchor(small_experiment.splits.train, val)
    shapes = []
    for target, (budget, plan) in enumerate(zip(budget_range.budgets(), plans, strict=True)):
        expected = _best_fitting_template(measured_templates, budget)
        if plan.mixed:
            alone = next(e for mas, e in measured_templates if mas is expected)
            if alone.meets(budget):
                assert plan.measured.meets(budget) and plan.measured.perf > alone.perf
            else:  # nothing alone fits: the plan closest to the budget
                assert plan.measured.excess(budget) <= alone.excess(budget)
        else:
            assert _shape(plan.easy) == _shape(expected)
        shapes.append((_shape(plan.easy), _shape(plan.hard)))
        systems = trainer.controller.construct(
            small_experiment.embed(val), budget_condition(budget, len(val)), delta=trainer.deltas[target]
        )
        # a mixture is imitated stage by stage: near its threshold a query may get a blend of the two
        planned = [_shape(mas) in {_shape(plan.easy), _shape(plan.hard)} for mas in systems]
        assert np.mean(planned) >= (0.75 if plan.mixed else 1.0)
    assert len(set(shapes)) > 1, "the range should span budgets that different templates fit best"


def test_templates_are_told_apart_on_the_training_questions_too(small_experiment, one_thread) -> None:
    """A template learns nothing from the training split, so it is measured there as well: one that wins on
    the few validation questions but loses on the many training ones is not chosen."""
    weak, strong = small_experiment.kept[:2]
    val_ids = {q.id for q in small_experiment.splits.val}

    def outcome(mas: MAS, query) -> Outcome:
        backbones = {agent.backbone for agent in mas.agents}
        lucky = backbones == {weak} and query.id in val_ids  # right on every validation question only
        steady = backbones == {strong} and sum(map(ord, query.id)) % 10 != 0  # right on ~90% everywhere
        return Outcome("A", lucky or steady, 0.0001 * len(mas), 1.0, len(mas))

    trainer = _trainer(
        small_experiment, Budget(tok=1.0), TrainConfig(anchor_steps=1, anchor_mixture_steps=1)
    )  # the choice
    trainer.run.execute = lambda pairs: [outcome(mas, query) for mas, query in pairs]
    plans = trainer.anchor(small_experiment.splits.train, small_experiment.splits.val)
    assert [_shape(plan.easy) for plan in plans] == [_shape(MAS.single(small_experiment.roles.decision.name, strong))]
    assert not plans[0].mixed


def _mixture_world(experiment: Experiment, config: TrainConfig, others_tok: float) -> tuple[Trainer, dict[str, float]]:
    """A trainer, its difficulty head pretrained on the simulator, then on a world where the cheapest kept
    backbone (0.1 USD per 100 queries) is right exactly on the queries that head ranks easier than the
    median, the dearest (1.0) on all, and every other template is wrong at `others_tok`; and the head's
    difficulty per question."""
    cheap, dear = experiment.kept[0], experiment.kept[-1]
    difficulty: dict[str, float] = {}  # empty while pretraining: the simulator answers

    def outcome(mas: MAS, query: Query) -> Outcome:
        backbones = {agent.backbone for agent in mas.agents}
        if len(mas) == 1 and backbones == {dear}:
            return Outcome("A", True, 0.01, 1.0, 1)
        if len(mas) == 1 and backbones == {cheap}:
            return Outcome("A", difficulty[query.id] < median, 0.001, 1.0, 1)
        return Outcome("B", False, others_tok / 100 * len(mas), 1.0, len(mas))

    world = dataclasses.replace(experiment)
    world.execute = lambda pairs: (  # type: ignore[method-assign]
        [outcome(mas, query) for mas, query in pairs] if difficulty else experiment.execute(pairs)
    )
    trainer = _trainer(world, Budget(tok=0.75), config)
    trainer.pretrain_difficulty(experiment.splits.train)
    questions = [*experiment.splits.train, *experiment.splits.val]
    with torch.no_grad():
        values = trainer.controller.difficulty(experiment.embed(questions)).tolist()
    median = float(np.median(values))
    difficulty.update(zip((q.id for q in questions), values, strict=True))
    return trainer, difficulty


def test_a_mixture_sends_the_hardest_queries_to_the_dearer_template(small_experiment, one_thread) -> None:
    """The budget (0.75) fits the dear backbone for barely two thirds of the queries and the cheap one is
    right on half: the plan is a mixture of the two, it fits and beats both alone, and the imitated
    controller sends the queries above its threshold to the dear backbone."""
    trainer, difficulty = _mixture_world(small_experiment, TrainConfig(), others_tok=0.01)
    splits, budget = small_experiment.splits, Budget(tok=0.75)
    [plan] = trainer.anchor(splits.train, splits.val)
    decision, cheap, dear = small_experiment.roles.decision.name, small_experiment.kept[0], small_experiment.kept[-1]
    assert plan.mixed
    assert (_shape(plan.easy), _shape(plan.hard)) == (
        _shape(MAS.single(decision, cheap)),
        _shape(MAS.single(decision, dear)),
    )
    assert plan.measured.meets(budget) and plan.measured.perf > 0.75  # the cheap one alone: 0.5; the dear one: over
    assert 0.4 <= plan.hard_share <= 0.75
    val = splits.val
    systems = trainer.controller.construct(small_experiment.embed(val), budget_condition(budget, len(val)))
    sent_dear = [{agent.backbone for agent in mas.agents} == {dear} for mas in systems]
    above = [difficulty[q.id] > plan.threshold for q in val]
    assert np.mean(np.array(sent_dear) == np.array(above)) >= 0.9


@pytest.mark.parametrize("built_dearer", [1, 2])
def test_a_mixture_built_over_the_budget_is_planned_again_under_the_budget_tightened_by_the_overshoot(
    small_experiment, one_thread, monkeypatch, built_dearer
) -> None:
    """The first imitation (or the first two) learns a split that sends a fifth of the queries more to the
    dear side (as a threshold learned imprecisely would) and builds over the budget its mixture met: the
    target plans again under the budget shrunk by each overshoot in turn, a mixture sending fewer queries to
    the dear backbone each time, and the last one, built as planned, meets the budget (no fallback to a
    template alone while re-plans are left)."""
    real_imitate = anchor_module.imitate
    imitated_thresholds: list[list[float]] = []

    def first_built_dearer(run, train, imitated, difficulty) -> None:
        thresholds = imitated.thresholds
        if len(imitated_thresholds) < built_dearer:
            values = np.sort(np.array(list(difficulty.values())))
            thresholds = torch.tensor(
                [
                    float(np.quantile(values, max(0.0, float(np.mean(values <= t)) - 0.2))) if math.isfinite(t) else t
                    for t in thresholds.tolist()
                ]
            )
        imitated_thresholds.append(imitated.thresholds.tolist())
        real_imitate(run, train, dataclasses.replace(imitated, thresholds=thresholds), difficulty)

    monkeypatch.setattr(anchor_module, "imitate", first_built_dearer)
    trainer, _ = _mixture_world(small_experiment, TrainConfig(anchor_mixture_steps=400), others_tok=0.01)
    splits, budget = small_experiment.splits, Budget(tok=0.75)
    [plan] = trainer.anchor(splits.train, splits.val)
    thresholds = [values[0] for values in imitated_thresholds]
    # every imitation built dearer re-plans, and the last plan is built within the budget; a second imitation
    # built dearer may already fit the budget its overshoot tightened (seen once in a full parallel suite run,
    # never with this file alone: how far over it lands depends on what ran before it in the process)
    assert 2 <= len(thresholds) <= built_dearer + 1
    assert plan.mixed and all(math.isfinite(t) for t in thresholds)
    assert thresholds == sorted(set(thresholds))  # higher each time: fewer queries sent to the dear backbone
    assert plan.threshold == thresholds[-1]
    assert trainer.anchored is not None
    assert trainer.anchored.snapshot.judged_evaluations()[0].meets(budget)


def _chain_to_imitate(
    experiment: Experiment, recorded: dict[tuple[object, ...], Outcome], config: TrainConfig
) -> tuple[Trainer, anchor_module.ImitationTargets, list[Query]]:
    """A trainer for one loose budget, the imitation targets of a chain on the strongest backbone, and the
    training questions (each of difficulty 0 for `imitate`)."""
    chain = topology_mas("chain", experiment.roles, experiment.strongest_backbone())
    trainer = _trainer(_replaying(experiment, recorded), Budget(tok=100.0), config)
    plan = anchor_module.AnchorPlan(chain, chain, measure(experiment, [chain], experiment.splits.val[:1]))
    return trainer, anchor_module.ImitationTargets.of(trainer.controller, [plan]), list(experiment.splits.train)


@pytest.mark.parametrize("faithful_rounds", [0, 30])
def test_imitation_goes_on_until_every_target_is_built_as_planned(
    small_experiment, template_outcomes, one_thread, monkeypatch, faithful_rounds: int
) -> None:
    """Three steps of imitation per round are too few to learn a chain on the strongest backbone for every
    training query: without more rounds the policy builds something else for some of them; with them it
    goes on, round by round, until the chain is built for at least `anchor_faithful_share` of them, and
    no further."""
    shares: list[float] = []  # after each round of steps
    real_steps = anchor_module.imitation_steps
    config = TrainConfig(anchor_steps=3, anchor_faithful_rounds=faithful_rounds, anchor_faithful_share=0.95)
    trainer, imitated, train = _chain_to_imitate(small_experiment, template_outcomes, config)
    difficulty = {q.id: 0.0 for q in train}

    def measured_after(*args, **kwargs) -> None:
        real_steps(*args, **kwargs)
        shares.extend(anchor_module.built_as_planned(trainer.run, train, imitated, difficulty))

    monkeypatch.setattr(anchor_module, "imitation_steps", measured_after)
    anchor_module.imitate(trainer.run, train, imitated, difficulty)
    if faithful_rounds == 0:
        assert len(shares) == 1 and shares[0] < 0.95
    else:
        assert 1 < len(shares) < faithful_rounds + 1, shares
        assert max(shares[:-1]) < 0.95 <= shares[-1]  # stopped at the first round built as planned


@pytest.mark.parametrize(("passes", "expected_steps"), [(2.0, 3), (1000.0, 300)])
def test_a_round_of_imitation_takes_at_most_the_configured_passes(
    small_experiment, template_outcomes, one_thread, monkeypatch, passes: float, expected_steps: int
) -> None:
    """48 training questions, one target, batches of 32: two passes are 3 steps, where 300 are configured;
    with room for 1000 passes the configured 300 steps are taken."""
    steps_taken: list[int] = []
    monkeypatch.setattr(anchor_module, "imitation_steps", lambda *args: steps_taken.append(args[4]))
    monkeypatch.setattr(anchor_module, "built_as_planned", lambda *args: [1.0])
    config = TrainConfig(anchor_steps=300, anchor_max_passes=passes, batch_queries=32)
    trainer, imitated, train = _chain_to_imitate(small_experiment, template_outcomes, config)
    assert len(train) == 48
    anchor_module.imitate(trainer.run, train, imitated, {q.id: 0.0 for q in train})
    assert steps_taken == [expected_steps]


def test_the_tightened_budget_shrinks_each_axis_by_its_overshoot_and_only_where_built_dearer() -> None:
    """Built 20% dearer on Tok than planned and cheaper on Lat: the Tok budget shrinks by 1/1.2, Lat stays."""
    planned = Evaluation(perf=0.5, tok=0.9, lat=5.0, tok_upper=1.0, lat_upper=6.0, n=100)
    built = dataclasses.replace(planned, tok_upper=1.2, lat_upper=5.5)
    shrunk = anchor_module.tightened(Budget(tok=1.5, lat=8.0), planned, built)
    assert (shrunk.tok, shrunk.lat) == (pytest.approx(1.25), 8.0)
    assert anchor_module.tightened(Budget(tok=1.5), planned, planned) == Budget(tok=1.5)


def test_a_mixture_not_built_within_the_budget_falls_back_to_the_best_template_alone(
    small_experiment, one_thread, monkeypatch
) -> None:
    """An imitation that sends every query to a mixture's dear side (as a split learned badly would, in
    part) builds over the budget the mixture met, and so does the mixture planned under the tightened
    budget: the start imitates the best template that fits alone (the cheap backbone) instead, and meets
    the budget."""
    real_imitate = anchor_module.imitate

    def everything_hard(run, train, imitated, difficulty) -> None:
        mixed = torch.isfinite(imitated.thresholds)
        thresholds = torch.where(mixed, torch.full_like(imitated.thresholds, -math.inf), imitated.thresholds)
        real_imitate(run, train, dataclasses.replace(imitated, thresholds=thresholds), difficulty)

    monkeypatch.setattr(anchor_module, "imitate", everything_hard)
    trainer, _ = _mixture_world(small_experiment, TrainConfig(), others_tok=0.01)
    splits, budget = small_experiment.splits, Budget(tok=0.75)
    [plan] = trainer.anchor(splits.train, splits.val)
    assert not plan.mixed
    assert _shape(plan.easy) == _shape(MAS.single(small_experiment.roles.decision.name, small_experiment.kept[0]))
    assert trainer.anchored is not None
    assert trainer.anchored.snapshot.judged_evaluations()[0].meets(budget)


def test_the_anchored_start_is_judged_by_its_cost_on_the_questions_it_was_chosen_on(
    small_experiment, one_thread
) -> None:
    """The template fits the budget on the training and validation questions together (mean Tok 0.6,
    upper bound about 0.7 against 1.0), but its cost varies so much on the 16 validation questions alone
    that their upper bound (about 1.25) is over. The final choice judges the anchored start by the cost it
    was chosen on: it meets the budget, so no trained policy can replace it just by fitting."""
    strong = small_experiment.kept[-1]
    val_rank = {q.id: i for i, q in enumerate(small_experiment.splits.val)}

    def outcome(mas: MAS, query: Query) -> Outcome:
        if {agent.backbone for agent in mas.agents} != {strong} or len(mas) != 1:
            return Outcome("B", False, 0.0001 * len(mas), 1.0, len(mas))  # every other template is cheap and wrong
        rank = val_rank.get(query.id)
        tok = 0.5 if rank is None else (0.1 if rank % 2 else 1.7)  # in USD per 100 queries
        return Outcome("A", True, tok / 100, 1.0, 1)

    budget = Budget(tok=1.0)
    costed = dataclasses.replace(small_experiment)
    costed.execute = lambda pairs: [outcome(mas, query) for mas, query in pairs]  # type: ignore[method-assign]
    trainer = _trainer(costed, budget, TrainConfig(epochs=1, learning_rate=0.0))
    splits = small_experiment.splits
    train, val, test = splits.train, splits.val, splits.test
    trainer.anchor(train, val)
    result = trainer.train(train, val, test)
    assert result.anchored and result.judged is not None
    assert result.feasible and result.judged.meets(budget)
    assert result.judged.tok == pytest.approx(0.6, abs=0.03)  # (imitation may miss a query or two)
    assert result.judged.perf >= 0.9
    on_val = trainer.run.evaluate(val)
    assert not on_val.meets(budget), "validation alone would put the anchored start over the budget"
    assert result.val == on_val, "reported as validation: what it does there, not the cost it was judged by"


def test_a_trained_policy_must_win_by_the_margin_to_replace_the_anchored_start() -> None:
    margin = 0.03
    assert selection_key((1, 0.80), True, margin) > selection_key((1, 0.82), False, margin)
    assert selection_key((1, 0.80), True, margin) < selection_key((1, 0.84), False, margin)
    assert selection_key((0, 0.95), True, margin) < selection_key((1, 0.50), False, margin), "budgets met first"


def test_a_build_that_learns_nothing_keeps_the_anchored_start(
    small_experiment, template_outcomes, measured_templates, one_thread
) -> None:
    """With a zero learning rate every epoch behaves like the anchored start: the result says so, and
    its margin is one standard error of the anchored start's validation Perf."""
    val = small_experiment.splits.val
    budget = Budget(tok=0.05)
    spec = BuildSpec(budget=budget, train=TrainConfig(epochs=2, learning_rate=0.0), restarts=2)
    _, _, result = train_on(_replaying(small_experiment, template_outcomes), spec)
    assert result.anchored
    assert (result.kept_run, result.kept_epoch) == (1, 0)
    assert result.describe_kept(2).startswith("kept: the anchored start of run 1 of 2")
    assert 0 < result.anchor_margin <= 0.5 / len(val) ** 0.5
    best = _best_fitting_template(measured_templates, budget)
    template = measure(small_experiment, [best] * len(val), val)
    assert template.meets(budget)
    assert result.val.meets(budget) and result.val.perf >= template.perf


def test_fixed_lambdas_keep_the_users_delta_and_rank_by_the_penalised_objective(tmp_path: Path) -> None:
    cheap_and_good = Evaluation(perf=0.85, tok=0.1, lat=1.0, tok_upper=0.1, lat_upper=1.0, n=10)
    costly_and_better = dataclasses.replace(cheap_and_good, perf=0.9, tok=1.0, tok_upper=1.0)
    penalties = (0.1, 0.0)
    assert budget_preference(cheap_and_good, Budget(), penalties) > budget_preference(
        costly_and_better, Budget(), penalties
    )
    assert budget_preference(cheap_and_good, Budget()) < budget_preference(costly_and_better, Budget())

    spec = BuildSpec(
        ExperimentSpec(sizes=(24, 12, 12)),
        train=TrainConfig(epochs=1, lambda_tok=1.0, lambda_lat=0.01),
        controller=ControllerConfig(delta=0.25),
        restarts=1,
    )
    built = build(spec, tmp_path / "run")
    assert built.controller.config.delta == 0.25
    assert built.trainer.anchored is None


def test_training_keeps_pulling_towards_the_anchored_templates(small_experiment, template_outcomes, one_thread) -> None:
    """Where the reward says nothing (every sample scores the same), REINFORCE steps move the policy towards
    the imitated templates when `anchor_weight` > 0, and not without (then only rounding noise moves it)."""
    val, train = small_experiment.splits.val, small_experiment.splits.train
    budget_range = BudgetRange(Budget(tok=1.0), ratio=100, steps=2)
    rows = torch.arange(len(train)) % 2  # half the queries under each target, with its template
    condition = conditions([budget_range.budgets()[int(t)] for t in rows])

    def gain(weight: float) -> float:
        torch.manual_seed(0)
        config = TrainConfig(
            anchor_steps=5, anchor_mixture_steps=5, anchor_weight=weight, entropy_bonus=0.0, length_penalty=0.0
        )
        trainer = _trainer(_replaying(small_experiment, template_outcomes), budget_range, config)
        trainer.anchor(train, val)
        assert trainer.anchored is not None
        trainer.run.execute = lambda pairs: [Outcome("A", True, 0.001, 1.0, 1) for _ in pairs]  # a flat reward

        def imitation_log_prob() -> float:
            with torch.no_grad():
                difficulty = torch.tensor([trainer.anchored.difficulty[q.id] for q in train])
                given = trainer.anchored.imitated.decisions_for(difficulty, rows)
                step = trainer.controller(small_experiment.embed(train), condition, "given", given)
            return float(step.log_prob.mean())

        before = imitation_log_prob()
        # small steps: the test is about the pull's direction; at training's 1e-2, after only 5 imitation
        # steps, Adam overshoots back and forth on the long templates' topology and gating terms
        optimiser = torch.optim.Adam(trainer.controller.parameters(), lr=1e-3)
        for _ in range(5):
            trainer._step(train[:16], optimiser, np.random.default_rng(0))
        return imitation_log_prob() - before

    assert gain(0.5) > max(gain(0.0), 0.0) + 0.1


def _evaluation(perf: float, tok: float, n: int = 200) -> Evaluation:
    return Evaluation(perf=perf, tok=tok, lat=1.0, tok_upper=1.1 * tok, lat_upper=1.0, n=n)


def test_delta_spends_the_budget_where_validation_perf_is_flat() -> None:
    """Among the deltas that fit, the most generous one whose Perf is within one standard error of the best
    (0.028 at Perf 0.8 on 200 questions): not the best-on-validation delta at under half the budget."""
    budget = Budget(tok=1.0)
    trials = {
        -1.0: _evaluation(0.80, 0.30),
        -0.5: _evaluation(0.81, 0.45),  # the best validation Perf, by two questions
        0.0: _evaluation(0.80, 0.60),
        0.5: _evaluation(0.79, 0.85),  # the most generous delta that fits, within noise of the best
        1.0: _evaluation(0.82, 1.20),  # over the budget
    }
    assert spend_slack(trials, budget, z=1.0) == (True, trials[0.5], 0.5)
    assert budget_preference(trials[-0.5], budget) == max(budget_preference(e, budget) for e in trials.values())


def test_delta_does_not_spend_on_a_real_loss_of_perf() -> None:
    budget = Budget(tok=1.0)
    trials = {-1.0: _evaluation(0.80, 0.30), 0.0: _evaluation(0.79, 0.60), 0.5: _evaluation(0.70, 0.85)}
    assert spend_slack(trials, budget, z=1.0)[2] == 0.0
    assert spend_slack(trials, budget, z=0.0)[2] == -1.0, "z = 0: the best validation Perf"


def test_without_a_fitting_delta_the_least_excess_is_reported_infeasible() -> None:
    trials = {0.0: _evaluation(0.80, 1.5), 1.0: _evaluation(0.9, 3.0)}
    assert spend_slack(trials, Budget(tok=1.0), z=1.0) == (False, trials[0.0], 0.0)


class _AlwaysRight:
    """A world whose every answer is right: Perf is flat in delta, only the cost changes."""

    def __init__(self, world: object) -> None:
        self.world = world

    def answer(self, call: object) -> object:
        return dataclasses.replace(self.world.answer(call), score=1.0)

    def __getattr__(self, name: str) -> object:
        return getattr(self.world, name)


def test_a_trained_controller_spends_a_budget_that_costs_it_no_perf(small_experiment, one_thread) -> None:
    """Where every pool is right on every question, training's delta goes as far as the upper cost bound
    allows, not to the cheapest delta of equal validation Perf."""
    experiment = dataclasses.replace(small_experiment, world=_AlwaysRight(small_experiment.world))
    splits = experiment.splits
    torch.manual_seed(0)
    probe = _trainer(experiment, Budget(tok=100.0), TrainConfig(epochs=1))
    cheapest = probe.run.evaluate(splits.val, delta=-10.0).tok_upper
    costliest = probe.run.evaluate(splits.val, delta=10.0).tok_upper
    budget = Budget(tok=(cheapest + costliest) / 2)
    torch.manual_seed(0)
    trainer = _trainer(experiment, budget, TrainConfig(epochs=1))
    result = trainer.train(splits.train, splits.val, splits.test)
    assert result.feasible and result.val.perf == 1.0
    sweep = sweep_delta(trainer.run, splits.val, result.val)
    fitting = [delta for delta, e in sweep.items() if e.meets(budget)]
    assert trainer.deltas[-1] == max(fitting)
    assert result.val.tok > best_delta(trainer.run, sweep)[1].tok, "the old rule, cheaper on ties, spends less"
