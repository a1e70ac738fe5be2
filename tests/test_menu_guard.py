"""The menu guard: the trained policy serves a budget only where it beats the menu's best plan on held-out folds;
elsewhere that plan serves every query, in the run folder, `TrainedController`, `evaluate` and `serve` alike."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.experiment import ExperimentSpec
from agentbalance.mas import MAS
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.train.menu_guard import MenuScores, fold_of, held_out_picks, policy_wins
from agentbalance.trained import TrainedController


def scores(correct: np.ndarray, tok: float | np.ndarray = 0.1) -> MenuScores:
    plans = [MAS.single("Decision Maker", f"b{i}") for i in range(correct.shape[0])]
    tok_matrix = np.broadcast_to(np.asarray(tok, dtype=float).reshape(-1, 1), correct.shape).copy()
    return MenuScores(plans, correct.astype(float), tok_matrix, np.ones_like(tok_matrix))


def test_folds_are_dealt_evenly_and_the_same_for_one_seed() -> None:
    folds = fold_of(103, seed=7)
    assert sorted(np.bincount(folds).tolist()) == [20, 20, 21, 21, 21]
    assert (folds == fold_of(103, seed=7)).all()
    assert not (folds == fold_of(103, seed=8)).all()


def test_the_best_plan_is_the_most_accurate_whose_upper_cost_bound_fits() -> None:
    correct = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]])
    menu = scores(correct, tok=np.array([0.9, 0.2, 0.1]))
    every = np.arange(4)
    assert menu.best_fitting(Budget(tok=1.0), every, z=1.64) == 0
    assert menu.best_fitting(Budget(tok=0.5), every, z=1.64) == 1  # the best plan costs too much
    assert menu.best_fitting(Budget(tok=0.05), every, z=1.64) is None  # nothing fits


def test_a_plan_that_won_only_on_its_own_questions_is_not_picked_for_them() -> None:
    """The winner's curse: 5 plans, each right only on the questions of one fold. On all the questions each scores
    20% and one of them is the in-sample best; chosen without a fold's questions, the pick is never the plan that
    is right on them, so the held-out score of picking is 0%, the truth about such a menu."""
    folds = fold_of(50, seed=0)
    correct = np.array([(folds == k).astype(float) for k in range(5)])
    menu = scores(correct)
    assert menu.best_fitting(Budget(tok=1.0), np.arange(50), z=1.64) is not None
    picks = held_out_picks(menu, Budget(tok=1.0), folds, z=1.64)
    assert picks is not None
    assert correct[picks, np.arange(50)].sum() == 0


def test_no_held_out_picks_when_a_fold_leaves_no_plan_that_fits() -> None:
    folds = fold_of(10, seed=0)
    tok = np.where(folds == 0, 5.0, 0.1)[None, :]  # dear on fold 0's questions: fits only without them
    menu = MenuScores([MAS.single("Decision Maker", "b")], np.ones((1, 10)), tok, np.ones((1, 10)))
    assert menu.best_fitting(Budget(tok=0.5), np.flatnonzero(folds != 0), z=0.0) == 0
    assert held_out_picks(menu, Budget(tok=0.5), folds, z=0.0) is None


def test_the_policy_must_win_by_the_margin_on_the_same_questions() -> None:
    menu = np.array([1, 0] * 50, dtype=float)
    better = menu.copy()
    better[1:40:2] = 1  # right on 20 more questions
    assert policy_wins(better, menu, margin_z=1.0)[0]
    assert not policy_wins(menu, menu, margin_z=1.0)[0]  # a tie keeps the plan
    one_more = menu.copy()
    one_more[1] = 1
    wins, difference, margin = policy_wins(one_more, menu, margin_z=1.5)
    assert not wins and difference == pytest.approx(0.01) and margin > difference
    ungraded = np.full(100, np.nan)
    assert policy_wins(ungraded, menu, margin_z=1.0) == (False, 0.0, 0.0)


SPEC = BuildSpec(
    ExperimentSpec(sizes=(40, 20, 20)), Budget(0.5, 60.0), TrainConfig(epochs=1, menu_guard=True), restarts=1
)


@pytest.fixture(scope="module")
def plan_served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build whose policy can never win (a margin of 1000 standard errors): a plan serves its budget."""
    out = tmp_path_factory.mktemp("guarded") / "run"
    build(dataclasses.replace(SPEC, train=TrainConfig(epochs=1, anchor_margin_z=1000.0, menu_guard=True)), out)
    return out


@pytest.mark.slow  # builds
def test_where_the_policy_does_not_win_one_plan_serves_every_query_and_the_run_folder_says_so(
    plan_served: Path,
) -> None:
    config = json.loads((plan_served / "config.json").read_text())
    metrics = json.loads((plan_served / "metrics.json").read_text())
    (decision,) = metrics["menu_guard"]
    assert decision["served_by"] == "plan" and config["plans"][0] == decision["plan"]
    plan = MAS.from_json(config["plans"][0])
    trained = TrainedController.load(plan_served)
    built = trained.construct_many(["What is 2 + 2?", "Name the capital of France."])
    assert [m.to_json() | {"query_id": None} for m in built] == [plan.to_json()] * 2
    # what build reported on validation is what the served plan does there, and it fits the budget
    on_val = trained.evaluate(split="val")
    assert on_val.perf == pytest.approx(metrics["val"]["perf"]) and on_val.tok == pytest.approx(metrics["val"]["tok"])
    assert metrics["feasible"] and plan.to_json() == decision["plan"]
    # the governor's offset has nothing to move where a plan serves: its whole range goes to the fallback share
    assert trained.cheapest_shift() == 0.0


@pytest.mark.slow  # builds
def test_without_the_guard_the_policy_serves_and_no_plan_is_saved(tmp_path: Path) -> None:
    out = tmp_path / "run"
    build(dataclasses.replace(SPEC, train=TrainConfig(epochs=1)), out)  # the guard is opt-in
    assert json.loads((out / "config.json").read_text())["plans"] == []
    assert TrainedController.load(out).plan_for() is None


@pytest.mark.slow  # builds
def test_over_other_backbones_the_policy_serves_since_the_plans_were_chosen_among_the_trained_ones(
    plan_served: Path,
) -> None:
    plan = TrainedController.load(plan_served).plan_for()
    assert plan is not None
    shipped = Catalog.load()
    dropped = plan.agents[-1].backbone
    inductive = TrainedController.load(plan_served, catalog=shipped.subset(n for n in shipped.names if n != dropped))
    assert inductive.plan_for() is None
    built = inductive.construct("What is 2 + 2?")
    assert dropped not in {agent.backbone for agent in built.agents}
