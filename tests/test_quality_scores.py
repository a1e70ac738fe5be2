"""Quality scores: a graded answer has a quality in [0, 1], from the replay world's `score` column (or its `correct` as
1/0) through traces, Perf, its standard error and the reward; right/wrong numbers, published ones included, do not
move."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.curve import summarise_curve
from agentbalance.evaluation.curve_files import CurveRow
from agentbalance.mas import MAS, Agent
from agentbalance.measuring import CONFIDENCE_Z, summarise
from agentbalance.pooling import build_pools
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import Outcome, grade
from agentbalance.runtime.rollout import execute
from agentbalance.runtime.runner import Runner
from agentbalance.serve.protocol import details_of
from agentbalance.tasks.formats import PROGRAM
from agentbalance.tasks.list_task import ListTask
from agentbalance.templates import single_mas, topology_mas
from agentbalance.train.policy_gradient import Penalty
from agentbalance.worlds.base import AgentCall, Completion, Upstream
from agentbalance.worlds.recording import record
from agentbalance.worlds.replay import ReplayWorld
from tests.conftest import REPO, write_panel_mas
from tests.test_cli import agentbalance
from tests.test_cli_build import one_error_line
from tests.test_replay_world import MODELS, N, mcq_tables, write_world

GENERAL = RoleSet.load("general")


def world_folder(shared_data: Path, name: str) -> Path:
    folder = shared_data / name
    if not folder.is_dir():
        pytest.skip(f"replay world {name} not available: {folder} is absent")
    return folder


# ----------------------------------------------------------------------------- a tiny open-ended world


def recorded_score(model: str, i: int) -> float:
    """A judge's score of each backbone's response to instruction i: alpha strong, gamma weak, none only 0 or 1."""
    return {
        "alpha": 0.55 + 0.02 * i,
        "beta": 0.9 - 0.04 * i,
        "gamma": 0.05 + 0.01 * (i % 3),
        "delta": 0.25 * (i % 5),
    }[model]


def open_tables() -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """20 instructions without a gold answer; every response recorded with its judge's score (answers empty, as in
    the AlpacaEval worlds) and `correct` = score >= 0.5."""
    questions = [
        {"id": f"o{i:02d}", "domain": "helpful", "question": f"Write a short note number {i}.", "answer": None}
        for i in range(N)
    ]
    rows = [
        {
            "id": f"o{i:02d}",
            "model": model,
            "answer": "",
            "correct": int(recorded_score(model, i) >= 0.5),
            "completion_tokens": 100 + i,
            "cost_usd": None,
            "score": recorded_score(model, i),
        }
        for i in range(N)
        for model in MODELS
    ]
    return questions, pd.DataFrame(rows)


@pytest.fixture
def open_world(tmp_path: Path) -> ReplayWorld:
    return ReplayWorld.load(write_world(tmp_path / "tiny-open", *open_tables()))


def alone(world: ReplayWorld, roles: RoleSet, backbone: str, queries: list[Query]) -> list[Outcome]:
    return execute(world, roles, [(single_mas(roles, backbone), query) for query in queries])


# ----------------------------------------------------------------------------- the replay world's scores


def test_without_a_score_column_each_answer_scores_its_correct_as_one_or_zero(tmp_path: Path) -> None:
    questions, outcomes = mcq_tables()
    world = ReplayWorld.load(write_world(tmp_path / "tiny-mcq", questions, outcomes))
    recorded = outcomes.set_index(["id", "model"])["correct"]
    for query in world.questions:
        for model in MODELS:
            completion = alone(world, GENERAL, model, [query])[0]
            assert completion.score == float(recorded[(query.id, model)]) and type(completion.score) is float
    for model in MODELS:
        expected = outcomes[outcomes["id"].isin(world.split_ids("train")) & (outcomes["model"] == model)]["correct"]
        assert world.accuracy(model) == expected.mean()


def test_a_score_column_is_each_recorded_answers_quality(open_world: ReplayWorld) -> None:
    assert open_world.kind == "open", "no recorded answers, a judge's scores: a backbone's response is selected"
    assert open_world.default_roles == "general", "open-ended questions are answered by the general roles, not code's"
    for i, query in enumerate(open_world.questions):
        for model in MODELS:
            agent = Agent(id="a", role="Scientist", backbone=model)
            completion = open_world.answer(AgentCall(agent, GENERAL[agent.role], open_world.catalog[model], query))
            assert completion.text == f"Response from {model}"
            assert completion.score == pytest.approx(recorded_score(model, i))
            assert completion.correct is (recorded_score(model, i) >= 0.5)
    train = [int(q.id[1:]) for q in open_world.queries("train")]
    scores = [recorded_score("delta", i) for i in train]
    assert open_world.accuracy("delta") == pytest.approx(np.mean(scores))
    assert open_world.reliability("delta") == pytest.approx((sum(scores) + 1) / (len(scores) + 2)), "Laplace"


def test_perf_of_a_backbone_alone_is_its_mean_score_and_its_standard_error_the_sample_one(
    open_world: ReplayWorld,
) -> None:
    for model in MODELS:
        scores = np.array([recorded_score(model, i) for i in range(N)])
        evaluation = summarise(
            [MAS.single("Decision Maker", model)] * N, alone(open_world, GENERAL, model, open_world.questions), 1.64
        )
        assert evaluation.perf == pytest.approx(scores.mean())
        assert evaluation.perf != pytest.approx((scores >= 0.5).mean()), "the score, not the share of `correct`"
        assert evaluation.perf_standard_error() == pytest.approx(scores.std(ddof=1) / math.sqrt(N))


def test_right_or_wrong_perf_keeps_the_bernoulli_standard_error() -> None:
    single = MAS.single("Decision Maker", "qwen3-8b")
    outcomes = (
        [Outcome("A", 1.0, 0.01, 1.0, 1)] * 3 + [Outcome("B", 0.0, 0.01, 1.0, 1)] + [Outcome("C", None, 0.01, 1.0, 1)]
    )
    evaluation = summarise([single] * 5, outcomes, 1.64)
    assert (evaluation.perf, evaluation.n_graded, evaluation.perf_sd) == (0.75, 4, None)
    assert evaluation.perf_standard_error() == math.sqrt(0.75 * 0.25 / 4)


def test_a_mas_answer_scores_as_the_recorded_response_it_passes_on(tmp_path: Path, open_world: ReplayWorld) -> None:
    solvers = [("s1", "Scientist", "beta"), ("s2", "Historian", "delta")]
    mas = MAS.load(write_panel_mas(tmp_path / "mas.json", solvers, ("d", "Decision Maker", "gamma")))
    traces = Runner(open_world, GENERAL).run_sync([(mas, query) for query in open_world.questions])
    authors = set()
    for i, trace in enumerate(traces):
        author = str(trace.answer).removeprefix("solution:")
        authors.add(author)
        assert trace.score == pytest.approx(recorded_score(author, i)), trace.answer
        assert trace.to_json()["score"] == trace.score and trace.to_json()["correct"] is trace.correct
        details = details_of(trace, mas, Budget(), "t")
        assert (details["score"], details["correct"]) == (trace.score, trace.correct)
    assert authors - {"gamma"}, "the decision agent passes on an input's response, judged as that response"


def test_without_gold_an_answer_scores_as_the_recorded_response_that_gave_it(tmp_path: Path) -> None:
    """Two backbones give B, recorded at 0.8 and 0.6: an agent whose own answer wins keeps its own score; one that
    adopts B takes the score of the most reliable input that gave it; where the gold is known it decides."""
    questions, outcomes = mcq_tables()
    questions = [{**q, "answer": None} if q["id"] == "q01" else q for q in questions]
    one = outcomes["id"] == "q01"
    outcomes["score"] = outcomes["correct"].astype(float)
    outcomes.loc[one, "answer"] = outcomes.loc[one, "model"].map({"alpha": "B", "beta": "B", "gamma": "C", "delta": ""})
    outcomes.loc[one, "score"] = outcomes.loc[one, "model"].map({"alpha": 0.8, "beta": 0.6, "gamma": 0.3, "delta": 0.1})
    outcomes.loc[(outcomes["id"] == "q02") & (outcomes["model"] == "alpha"), "score"] = 0.4  # right, by the gold
    world = ReplayWorld.load(write_world(tmp_path / "voted", questions, outcomes))
    query = next(q for q in world.questions if q.id == "q01")

    def answered(backbone: str, inputs: tuple[Upstream, ...] = (), role: str = "Scientist") -> Completion:
        agent = Agent(id=backbone, role=role, backbone=backbone)
        return world.answer(AgentCall(agent, GENERAL[role], world.catalog[backbone], query, inputs))

    def passed(*backbones: str) -> tuple[Upstream, ...]:
        return tuple(Upstream(b, GENERAL["Scientist"], world.catalog[b], answered(b)) for b in backbones)

    recorded = {"alpha": 0.8, "beta": 0.6, "gamma": 0.3, "delta": 0.1}
    assert {b: (answered(b).answer, answered(b).score) for b in MODELS} == {
        "alpha": ("B", 0.8), "beta": ("B", 0.6), "gamma": ("C", 0.3), "delta": (None, 0.1)
    }  # fmt: skip
    decided = answered("beta", passed("alpha", "gamma"), "Decision Maker")
    assert (decided.answer, decided.score) == ("B", 0.6), "its own B: its own response"
    adopted = answered("delta", passed("alpha", "beta", "gamma"), "Decision Maker")
    trusted = max(("alpha", "beta"), key=world.reliability)
    assert (adopted.answer, adopted.score) == ("B", recorded[trusted]), "B as its most reliable giver passed it on"
    gold = next(q for q in world.questions if q.id == "q02")
    agent = Agent(id="a", role="Scientist", backbone="alpha")
    graded = world.answer(AgentCall(agent, GENERAL["Scientist"], world.catalog["alpha"], gold))
    assert (graded.answer, graded.score) == ("C", 1.0), "where the gold is known it decides, 1 or 0"


BAD_SCORES = {"above one": "1.5", "negative": "-0.25", "not a number": "high", "nan": "nan"}


@pytest.mark.parametrize("case", sorted(BAD_SCORES))
def test_a_bad_score_is_one_clear_error_naming_the_file_line_and_value(tmp_path: Path, case: str) -> None:
    questions, outcomes = open_tables()
    outcomes["score"] = outcomes["score"].map(repr)
    outcomes.loc[2, "score"] = BAD_SCORES[case]
    folder = write_world(tmp_path / "bad", questions, outcomes)
    with pytest.raises(AgentBalanceError) as caught:
        ReplayWorld.load(folder)
    for fragment in ("outcomes.csv.gz", "line 4", "column score", "from 0 to 1", repr(BAD_SCORES[case])):
        assert fragment in str(caught.value), f"{case}: {fragment!r} not in {caught.value}"


def test_an_empty_score_is_an_ungraded_answer_that_counts_in_no_mean(tmp_path: Path) -> None:
    """A judge that gave no rating leaves the cell empty: the answer is ungraded (None, never a guess of 0), and the
    backbone's accuracy and reliability are over its graded answers; a backbone with none graded is a clear error."""
    questions, outcomes = open_tables()
    outcomes["score"] = outcomes["score"].map(repr)
    unrated = (outcomes["model"] == "alpha") & outcomes["id"].isin(["o00", "o01", "o02", "o03"])
    outcomes.loc[unrated, "score"] = ""
    world = ReplayWorld.load(write_world(tmp_path / "unrated", questions, outcomes))
    for query in world.questions:
        (outcome,) = alone(world, GENERAL, "alpha", [query])
        expected = (
            None
            if query.id in {"o00", "o01", "o02", "o03"}
            else pytest.approx(recorded_score("alpha", int(query.id[1:])))
        )
        assert outcome.score == expected, query.id
    train = [int(q.id[1:]) for q in world.queries("train") if q.id not in {"o00", "o01", "o02", "o03"}]
    assert world.accuracy("alpha") == pytest.approx(np.mean([recorded_score("alpha", i) for i in train]))
    assert world.reliability("alpha") == pytest.approx(
        (sum(recorded_score("alpha", i) for i in train) + 1) / (len(train) + 2)
    )
    outcomes.loc[outcomes["model"] == "alpha", "score"] = ""
    silent = ReplayWorld.load(write_world(tmp_path / "silent", questions, outcomes))
    with pytest.raises(AgentBalanceError, match="none of the answers of backbone 'alpha' on the train split is graded"):
        silent.accuracy("alpha")


def test_the_command_line_reports_a_bad_score_without_a_traceback(tmp_path: Path) -> None:
    questions, outcomes = open_tables()
    outcomes.loc[2, "score"] = 1.25
    write_world(tmp_path / "bad", questions, outcomes)
    mas = write_panel_mas(tmp_path / "mas.json", [], ("d", "Decision Maker", "alpha"))
    done = agentbalance("run", "--mas", str(mas), "--world", "replay:bad", "o00", cwd=tmp_path)
    one_error_line(done, "line 4, column score: expected a number from 0 to 1, or empty (ungraded), got '1.25'")


def test_run_shows_a_judges_score_and_the_mean_score(tmp_path: Path) -> None:
    write_world(tmp_path / "open", *open_tables())
    mas = write_panel_mas(tmp_path / "mas.json", [], ("d", "Decision Maker", "delta"))
    queries = tmp_path / "ids.jsonl"
    queries.write_text('{"id": "o01"}\n{"id": "o02"}\n', encoding="utf-8")
    args = ["run", "--mas", str(mas), "--world", "replay:open", "--input", str(queries)]
    done = agentbalance(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(score 0.25)" in done.stdout and "(score 0.50)" in done.stdout
    assert "2 queries: mean score 37.5%" in done.stdout
    lines = [json.loads(line) for line in agentbalance(*args, "--json", cwd=tmp_path).stdout.splitlines()]
    assert [(line["score"], line["correct"]) for line in lines] == [(0.25, False), (0.5, True)]


# ----------------------------------------------------------------------------- grading, reward, recording


def test_a_graders_score_is_the_grade_and_one_outside_zero_to_one_is_an_error() -> None:
    query = Query(id="q", question="Say something kind.")
    said = Completion("Thanks!", "Thanks!", 10, 5, 0.0, 1.0)
    assert grade(query, said, lambda q, a: 0.25) == 0.25
    assert grade(query, said, lambda q, a: True) == 1.0 and grade(query, said, lambda q, a: None) is None
    for bad in (1.5, -0.1, math.nan):
        with pytest.raises(AgentBalanceError, match=r"a score is a number in \[0, 1\]"):
            grade(query, said, lambda q, a, bad=bad: bad)


def test_the_reward_is_the_score_minus_the_cost_penalties() -> None:
    penalty = Penalty(lambda_tok=0.5, lambda_lat=0.01)
    assert penalty.reward(Outcome("x", 0.25, 0.002, 3.0, 1)) == pytest.approx(0.25 - 0.5 * 0.2 - 0.03)
    assert penalty.reward(Outcome("x", 1.0, 0.002, 3.0, 1)) == pytest.approx(1.0 - 0.5 * 0.2 - 0.03)
    assert math.isnan(penalty.reward(Outcome("x", None, 0.002, 3.0, 1)))


def test_a_recording_keeps_the_scores_of_a_world_that_knows_them(tmp_path: Path, open_world: ReplayWorld) -> None:
    task = ListTask("tiny-open", "code", tuple(open_world.questions), PROGRAM)
    summary = asyncio.run(record(open_world, task, tmp_path / "again"))
    table = pd.read_csv(tmp_path / "again" / "outcomes.csv.gz")
    assert list(table.columns)[-1] == "score"
    assert (table["correct"] == (table["score"] >= 0.5)).all()
    again = ReplayWorld.load(tmp_path / "again")
    for model in MODELS:
        assert summary.accuracy[model] == pytest.approx(np.mean([recorded_score(model, i) for i in range(N)]))
        assert again.accuracy(model, "test") == pytest.approx(open_world.accuracy(model, "test"))


# ----------------------------------------------------------------------------- the real worlds (../shared/data)


def test_alpacaeval2_perf_of_each_backbone_alone_is_its_mean_recorded_score(shared_data: Path) -> None:
    folder = world_folder(shared_data, "alpacaeval2-dev")
    world = ReplayWorld.load(folder)
    assert (world.kind, world.default_roles) == ("open", "general")
    roles = RoleSet.load(world.default_roles)
    test = world.queries("test")
    recorded = pd.read_csv(folder / "outcomes.csv.gz", keep_default_na=False, dtype={"id": str})
    recorded = recorded[recorded["id"].isin({q.id for q in test})].groupby("model")
    scores, shares = recorded["score"].mean(), recorded["correct"].mean()
    differs = 0
    for backbone in world.catalog.names:
        evaluation = summarise([single_mas(roles, backbone)] * len(test), alone(world, roles, backbone, test), 1.64)
        assert evaluation.n_graded == len(test)
        assert evaluation.perf == pytest.approx(scores[backbone], abs=1e-12), backbone
        differs += abs(evaluation.perf - shares[backbone]) > 0.01
    assert differs >= 10, "Perf is the judge's score, not the share of answers scored 0.5 or more"


PUBLISHED = REPO / "benchmarks" / "results" / "curves-mmlu-pro-dev.json"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mmlu_pro_published_single_llm_summary_does_not_move(shared_data: Path, seed: int) -> None:
    """Every backbone alone and the base MAS on the seed's 400 test questions, as `curve --methods single` measures
    them, give the single-LLM row of the committed mmlu-pro-dev results to the published four decimals."""
    world = ReplayWorld.load(world_folder(shared_data, "mmlu-pro-dev"), seed=seed)
    published = next(run for run in json.loads(PUBLISHED.read_text())["runs"] if run["seed"] == seed)["summary"]
    roles = RoleSet.load(world.default_roles)
    test = world.queries("test")[:400]  # `curve`'s default --test

    def point(method: str, setting: str, mas: MAS) -> CurveRow:
        measured = summarise([mas] * len(test), execute(world, roles, [(mas, q) for q in test]), CONFIDENCE_Z)
        return CurveRow(method, setting, measured.perf, measured.tok, measured.lat, measured.n)

    strongest = str(build_pools(world.calibrated_catalog()).triples["perf"].idxmax())  # the base MAS's backbone
    rows = [point("base", "complete", topology_mas("complete", roles, strongest))]
    rows += [point("single", name, single_mas(roles, name)) for name in world.catalog.names]
    summary = summarise_curve(rows, ["single"])[0]
    assert {k: f"{v:.4f}" for k, v in summary.items() if k != "method"} == {
        k: f"{v:.4f}" for k, v in published["single"].items()
    }
