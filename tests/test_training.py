"""Training: the sync rollout is the runner's twin, the controller never sees gold, budgets are targeted."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import Experiment, ExperimentSpec, embed_queries
from agentbalance.policy.budget_input import budget_condition
from agentbalance.policy.controller import Controller
from agentbalance.policy.sampling import seeded
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.run_folder import load_controller
from agentbalance.runtime.rollout import rollout
from agentbalance.runtime.runner import Runner
from agentbalance.train.build import BuildSpec, Built, build, train_on
from agentbalance.train.config import TrainConfig
from agentbalance.train.policy_gradient import policy_gradient_loss
from agentbalance.train.reinforce import Trainer
from agentbalance.train.training_run import TrainingRun
from agentbalance.worlds.simulated import SimulatedWorld

pytestmark = pytest.mark.slow  # builds, trains or sweeps: left out of `make test-fast`


@pytest.fixture(scope="module")
def built(built_run: Built) -> Built:
    """The session's small build (conftest: 40 / 20 / 20 questions, Tok 0.5 and Lat 60, 2 epochs, 2 restarts)."""
    return built_run


def test_the_sync_rollout_gives_what_the_async_runner_gives(built) -> None:
    world = SimulatedWorld(Catalog.load(), seed=0)
    roles = RoleSet.load("mixed")
    queries = built.splits.test[:10]
    systems = built.controller.construct(torch.stack([built.trainer.embeddings[q.id] for q in queries]))
    traces = Runner(world, roles).run_sync(list(zip(systems, queries, strict=True)))
    for mas, query, trace in zip(systems, queries, traces, strict=True):
        outcome = rollout(world, roles, mas, query)
        assert outcome.score == trace.score
        assert outcome.cost_usd == pytest.approx(trace.cost_usd)
        assert outcome.latency_s == pytest.approx(trace.latency_s)


def test_constructions_do_not_change_when_the_gold_answers_are_shuffled(built) -> None:
    test = built.splits.test
    shuffled_answers = [q.answer for q in test]
    random.Random(0).shuffle(shuffled_answers)
    tampered = [
        Query(id=q.id, question=q.question, choices=q.choices, answer=a, domain=None, metadata={"difficulty": 9.9})
        for q, a in zip(test, shuffled_answers, strict=True)
    ]
    controller, encoder = built.controller, TextEncoder()  # fresh embeddings of the tampered queries
    condition = budget_condition(built.trainer.run.targets[-1], len(test))
    before = controller.construct(torch.stack(list(embed_queries(encoder, test).values())), condition)
    after = controller.construct(torch.stack(list(embed_queries(encoder, tampered).values())), condition)
    assert [m.to_json() for m in before] == [m.to_json() for m in after]


def test_the_reported_test_split_meets_the_budget_or_says_it_does_not(built) -> None:
    result, budget = built.result, built.trainer.run.targets[-1]
    assert len(result.history) == 2, "the kept run's own history (one of two restarts)"
    if result.feasible:
        assert result.val.tok_upper <= budget.tok and result.val.lat_upper <= budget.lat
    assert result.cheapest.tok <= result.test.tok + 1e-12 or not result.feasible
    assert 0 <= result.test.perf <= 1 and result.test.n == len(built.splits.test) == 20


def test_a_saved_controller_reloads_and_builds_the_same_mas(built) -> None:
    controller, config = load_controller(built.out)
    queries = built.splits.test[:5]
    embeddings = torch.stack([built.trainer.embeddings[q.id] for q in queries])
    condition = budget_condition(config.trained_budget, len(queries))
    assert [m.to_json() for m in controller.construct(embeddings, condition)] == [
        m.to_json() for m in built.controller.construct(embeddings, condition)
    ]


def test_an_unreachable_budget_is_refused_before_training_with_the_cheapest_point(tmp_path: Path) -> None:
    experiment = ExperimentSpec(sizes=(8, 4, 4))  # no number of questions reaches Tok 1e-6
    spec = BuildSpec(experiment, budget=Budget(tok=1e-6), train=TrainConfig(epochs=1), restarts=1)
    with pytest.raises(AgentBalanceError, match=r"below every reachable point: .*the cheapest, [\w.-]+, costs Tok"):
        build(spec, tmp_path / "run")
    assert not (tmp_path / "run" / "controller.pt").exists()
    # trained anyway (a curve's range, or the Python API), the result says it is not met, and where the cheapest is
    result = train_on(Experiment.open(experiment), spec)[2]
    assert not result.feasible
    assert result.cheapest.tok > 1e-6
    assert result.cheapest.agent_counts == {"1": 4}


def test_budgets_must_be_positive() -> None:
    with pytest.raises(AgentBalanceError, match="--budget-tok must be a positive number"):
        Budget(tok=0)


def test_the_difficulty_estimator_is_reported_overall_and_per_domain(built) -> None:
    quality = built.result.difficulty
    assert quality["n"] == 20 and set(quality["per_domain"]) == {"general", "math", "code"}
    assert quality["spearman"] is None or -1 <= quality["spearman"] <= 1


def test_a_run_folder_works_after_it_is_moved_away_from_the_role_files(built, tmp_path: Path) -> None:
    import json
    import shutil

    moved = tmp_path / "moved-run"
    shutil.copytree(built.out, moved)
    config = json.loads((moved / "config.json").read_text())
    config["roles"] = "/nowhere/roles.yaml"  # the library travels inside config.json
    (moved / "config.json").write_text(json.dumps(config))
    controller, _ = load_controller(moved)
    assert controller.context.role_names == built.controller.context.role_names


def test_samples_that_scored_the_same_give_no_policy_gradient() -> None:
    """Rewards equal within each query (up to rounding) carry no signal: only the entropy bonus may move
    the policy. Before, rounding error in the baseline was normalised into a full-size random step."""
    logits = torch.zeros(6, requires_grad=True)
    log_prob = torch.log_softmax(logits, dim=0)
    flat = torch.tensor([[0.987654321] * 3, [0.123456789] * 3], dtype=torch.float32)  # means round off
    policy_gradient_loss(flat, log_prob, torch.zeros(6), entropy_bonus=0.0).backward()
    assert logits.grad is not None and torch.count_nonzero(logits.grad) == 0


def test_a_better_sample_is_made_more_likely() -> None:
    logits = torch.zeros(4, requires_grad=True)
    log_prob = torch.log_softmax(logits, dim=0)
    reward = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=torch.float64)
    policy_gradient_loss(reward, log_prob, torch.zeros(4), entropy_bonus=0.0).backward()
    assert logits.grad is not None
    assert logits.grad[0] < 0 < logits.grad[1]  # gradient descent raises the rewarded sample's logit
    assert logits.grad[0] < logits.grad[2] and logits.grad[2] == logits.grad[3]  # the tied query: no signal


SHORT = TrainConfig(
    epochs=1, pretrain_steps=20, anchor_steps=10, anchor_mixture_steps=10, batch_queries=16, samples_per_query=2
)


def _weights_trained_after_global_draws(experiment: Experiment, global_seed: int) -> dict[str, torch.Tensor]:
    """A short training run whose every stage runs after torch's global generator was re-seeded and consumed
    (no anchored start: the one epoch's weights, drawn samples and all, are then the weights kept)."""
    with seeded(0):
        controller = Controller(experiment.context)
    trainer = Trainer(TrainingRun.of(experiment, controller, Budget(tok=1.0), SHORT, seed=0))
    torch.manual_seed(global_seed)
    torch.rand(global_seed)
    splits = experiment.splits
    trainer.pretrain_difficulty(splits.train)
    trainer.train(splits.train, splits.val, splits.test)
    return controller.state_dict()


def test_training_twice_with_one_seed_gives_identical_weights_whatever_the_global_random_state(
    small_experiment: Experiment, one_thread: None
) -> None:
    first = _weights_trained_after_global_draws(small_experiment, 1)
    second = _weights_trained_after_global_draws(small_experiment, 2)
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_training_leaves_torchs_global_random_state_as_it_was(small_experiment: Experiment, one_thread: None) -> None:
    torch.manual_seed(7)
    before = torch.random.get_rng_state()
    train_on(small_experiment, BuildSpec(budget=Budget(tok=1.0), train=SHORT, restarts=1))
    assert torch.equal(torch.random.get_rng_state(), before)
