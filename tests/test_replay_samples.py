"""Multi-sample replay worlds: the k-th agent on a backbone reads sample k (wrapping), statistics count a
question once, and a malformed `sample` column is one clear error naming the file and line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AgentResult, Caps, Execution, sample_indices
from agentbalance.runtime.rollout import rollout_execution
from agentbalance.worlds.base import AgentCall
from agentbalance.worlds.replay import ReplayWorld
from tests.test_replay_world import write_world as write_replay_world

GENERAL = RoleSet.load("general")
CODE = RoleSet.load("code")
SOLVER = "Knowledgeable Expert"
DECIDER = "Decision Maker"
LETTERS = "ABCD"
SAMPLES = {"cot": 2, "pot": 3}  # two backbones: K = 2 and K = 3
MODELS_YAML = """\
backbones:
  - {name: cot, family: a, reasoning: false, params_active_b: 8, price_in: 0.2, price_out: 0.6}
  - {name: pot, family: b, reasoning: false, params_active_b: 8, price_in: 0.2, price_out: 0.6}
"""
N = 6


def tokens_of(model: str, sample: int, question: int) -> int:
    """Recorded lengths that name their row: which backbone, which sample, which question."""
    return 1000 * (list(SAMPLES).index(model) + 1) + 100 * sample + question


def sampled_tables(samples: dict[str, int] = SAMPLES) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """N four-option questions; sample s of either backbone answers the letter s places after the gold."""
    questions = [
        {"id": f"q{i}", "question": f"Question {i}?", "choices": [f"option {c}" for c in LETTERS], "answer": "A"}
        for i in range(N)
    ]
    rows = [
        {
            "id": f"q{i}",
            "model": model,
            "sample": s,
            "answer": LETTERS[s],
            "correct": int(s == 0),
            "completion_tokens": tokens_of(model, s, i),
            "cost_usd": None,
        }
        for i in range(N)
        for model, k in samples.items()
        for s in range(k)
    ]
    return questions, pd.DataFrame(rows)


def write_world(folder: Path, questions: Sequence[dict[str, Any]], outcomes: pd.DataFrame) -> Path:
    return write_replay_world(folder, questions, outcomes, MODELS_YAML)


@pytest.fixture
def world(tmp_path: Path) -> ReplayWorld:
    return ReplayWorld.load(write_world(tmp_path / "sampled", *sampled_tables()))


def star(backbones: dict[str, str], decision: str, role: str = SOLVER) -> MAS:
    """Every agent feeds the decision agent; `backbones` maps agent id -> backbone, listed in that order."""
    agents = [Agent(id=i, role=DECIDER if i == decision else role, backbone=b) for i, b in backbones.items()]
    return MAS(agents, [(i, decision) for i in backbones if i != decision], decision)


def read_tokens(world: ReplayWorld, mas: MAS, query: Query, roles: RoleSet = GENERAL) -> dict[str, int]:
    """Each agent's recorded completion length in a run: which sample it read (see `tokens_of`)."""
    results = rollout_execution(world, roles, mas, query).results
    return {agent_id: r.completion.completion_tokens for agent_id, r in results.items() if r.completion is not None}


# ----------------------------------------------------------------------------- which sample each agent reads


def test_the_kth_agent_on_a_backbone_reads_sample_k_and_wraps_past_the_recorded_samples(world: ReplayWorld) -> None:
    mas = star({"c1": "cot", "c2": "cot", "c3": "cot", "p1": "pot", "p2": "pot", "p3": "pot", "d": "pot"}, "d")
    assert sample_indices(mas) == {"c2": 1, "c3": 2, "p2": 1, "p3": 2, "d": 3}  # the decision agent comes last
    query = world.questions[4]
    assert (world.samples(query.id, "cot"), world.samples(query.id, "pot")) == (2, 3)
    expected = {"c1": ("cot", 0), "c2": ("cot", 1), "c3": ("cot", 0), "p1": ("pot", 0), "p2": ("pot", 1)}
    expected |= {"p3": ("pot", 2), "d": ("pot", 0)}  # c3: 2 mod 2; d: 3 mod 3
    assert read_tokens(world, mas, query) == {a: tokens_of(m, s, 4) for a, (m, s) in expected.items()}


def test_an_agents_answer_and_correctness_come_from_its_sample(world: ReplayWorld) -> None:
    query = world.questions[0]
    agent = Agent(id="a", role=SOLVER, backbone="pot")
    for sample, letter in ((0, "A"), (1, "B"), (2, "C"), (5, "C")):
        completion = world.answer(AgentCall(agent, GENERAL[SOLVER], world.catalog["pot"], query, sample=sample))
        assert (completion.answer, completion.correct) == (letter, letter == "A")


def test_ties_in_the_dag_are_broken_by_agent_id_not_by_listing_order(world: ReplayWorld) -> None:
    listed_backwards = star({"z": "cot", "b": "cot", "a": "pot", "d": "pot"}, "d")
    assert sample_indices(listed_backwards) == {"z": 1, "d": 1}
    assert read_tokens(world, listed_backwards, world.questions[1])["b"] == tokens_of("cot", 0, 1)
    # the DAG comes first: an agent reads after every agent it listens to, whatever the ids
    agents = [Agent(id="z", role=SOLVER, backbone="cot"), Agent(id="a", role=DECIDER, backbone="cot")]
    assert sample_indices(MAS(agents, [("z", "a")], "a")) == {"a": 1}
    # and only then by id: a (after x) still reads before b, whose only input is y > x
    agents = [Agent(id=i, role=SOLVER, backbone=b) for i, b in (("y", "pot"), ("x", "pot"), ("b", "cot"))]
    agents += [Agent(id="a", role=SOLVER, backbone="cot"), Agent(id="d", role=DECIDER, backbone="pot")]
    chained = MAS(agents, [("x", "a"), ("y", "b"), ("a", "d"), ("b", "d")], "d")
    assert sample_indices(chained) == {"b": 1, "y": 1, "d": 2}


def test_a_mas_with_every_backbone_once_reads_sample_0_everywhere(world: ReplayWorld) -> None:
    mas = star({"c": "cot", "p": "pot", "d": "cot"}, "d")
    assert sample_indices(star({"c": "cot", "d": "pot"}, "d")) == {}
    assert sample_indices(mas) == {"d": 1}


def test_a_skipped_agent_keeps_its_index_so_later_agents_read_what_they_would_have(world: ReplayWorld) -> None:
    # x waits for a0 and starts past the cap, so it is skipped; y (no inputs) still runs, and reads sample 1
    agents = [Agent(id="a0", role=SOLVER, backbone="cot"), Agent(id="x", role=SOLVER, backbone="pot")]
    agents += [Agent(id="y", role=SOLVER, backbone="pot"), Agent(id="d", role=DECIDER, backbone="cot")]
    mas = MAS(agents, [("a0", "x"), ("x", "d"), ("y", "d")], "d")
    query = world.questions[2]
    execution = Execution(mas, query, GENERAL, world.catalog, Caps(max_seconds=1e-3))
    for agent_id in mas.topological_order():
        skip = execution.decide(agent_id)
        if skip is not None:
            execution.skip(agent_id, skip)
            continue
        execution.finish(agent_id, AgentResult(world.answer(execution.call(agent_id))))
    assert execution.results["x"].skipped and execution.results["y"].completion is not None
    assert execution.results["y"].completion.completion_tokens == tokens_of("pot", 1, 2)


def test_a_world_without_the_column_gives_every_sample_its_one_recording(tmp_path: Path) -> None:
    questions, outcomes = sampled_tables({"cot": 1, "pot": 1})
    single = ReplayWorld.load(write_world(tmp_path / "single", questions, outcomes.drop(columns=["sample"])))
    agent = Agent(id="a", role=SOLVER, backbone="cot")
    calls = [AgentCall(agent, GENERAL[SOLVER], single.catalog["cot"], single.questions[3], sample=s) for s in (0, 4)]
    assert single.answer(calls[0]) == single.answer(calls[1])
    assert single.samples("q3", "cot") == 1


# ----------------------------------------------------------------------------- statistics: a question counts once


def test_reliability_accuracy_and_length_average_over_samples_so_a_question_counts_once(tmp_path: Path) -> None:
    # q0: three samples, all right, 300 tokens each; q1: one sample, wrong, 100 tokens (K differs by question)
    questions = [
        {"id": f"q{i}", "question": f"Question {i}?", "choices": ["x", "y", "z", "w"], "answer": "A"} for i in range(2)
    ]
    rows = [("q0", "pot", s, "A", 1, 300) for s in range(3)] + [("q1", "pot", 0, "B", 0, 100)]
    rows += [(q, "cot", 0, "A", 1, 50) for q in ("q0", "q1")]  # cot: one right sample each
    columns = ["id", "model", "sample", "answer", "correct", "completion_tokens"]
    outcomes = pd.DataFrame(rows, columns=columns).assign(cost_usd=None)
    world = ReplayWorld.load(write_world(tmp_path / "uneven", questions, outcomes), split=(1.0, 0.0, 0.0))
    assert world.accuracy("pot") == pytest.approx(0.5)  # (1 + 0) / 2 questions, not 3 / 4 rows
    assert world.reliability("pot") == pytest.approx((0.5 * 2 + 1) / (2 + 2))
    assert world.median_completion_tokens("pot") == pytest.approx(200)  # median of the means 300 and 100
    assert world.calibrated_catalog()["pot"].scores["replay"] == pytest.approx(50)


def test_code_solutions_name_their_sample_and_a_passed_on_one_keeps_its_result(tmp_path: Path) -> None:
    questions = [{"id": f"c{i}", "question": f"Write f{i}.", "choices": None, "answer": None} for i in range(N)]
    # pot's solution passes in its sample 1 only; cot's never (so a pot solution outweighs it)
    rows = [(f"c{i}", m, s, int(m == "pot" and s == 1)) for i in range(N) for m, k in SAMPLES.items() for s in range(k)]
    outcomes = pd.DataFrame(rows, columns=["id", "model", "sample", "correct"])
    world = ReplayWorld.load(
        write_world(tmp_path / "code", questions, outcomes.assign(answer="", completion_tokens=10, cost_usd=None))
    )
    assert world.kind == "code"
    agents = [Agent(id=i, role="Programming Expert", backbone="pot") for i in ("p1", "p2")]
    mas = MAS([*agents, Agent(id="d", role=DECIDER, backbone="cot")], [("p1", "p2"), ("p2", "d")], "d")
    results = rollout_execution(world, CODE, mas, world.questions[0]).results
    said = {a: (r.completion.answer, r.completion.correct) for a, r in results.items() if r.completion is not None}
    assert said["p1"] == ("solution:pot", False)
    assert said["p2"] == ("solution:pot#1", True)  # its own sample 1 (a tie with p1's: an agent keeps its own)
    assert said["d"] == ("solution:pot#1", True)  # the passed-on solution keeps its sample and its result


# ----------------------------------------------------------------------------- a malformed sample column


def _break(change: dict[tuple[int, str], Any] | None = None, extra: dict[str, Any] | None = None) -> pd.DataFrame:
    outcomes = sampled_tables()[1]
    for (row, column), value in (change or {}).items():
        outcomes[column] = outcomes[column].astype(object)
        outcomes.loc[row, column] = value
    if extra is not None:
        outcomes = pd.concat([outcomes, pd.DataFrame([extra])], ignore_index=True)
    return outcomes


ROW = {"id": "q0", "model": "cot", "answer": "A", "correct": 1, "completion_tokens": 1, "cost_usd": None}
MALFORMED = {
    "negative": (_break({(3, "sample"): -1}), ["line 5, column sample", "non-negative integer", "-1"]),
    "not a number": (_break({(2, "sample"): "two"}), ["line 4, column sample", "'two'"]),
    "fractional": (_break({(0, "sample"): 0.5}), ["line 2, column sample", "'0.5'"]),
    "empty": (_break({(1, "sample"): ""}), ["line 3, column sample"]),
    "a gap": (_break({(4, "sample"): 3}), ["line 6, column sample", "'q0'", "'pot'", "sample 3 but no sample 2"]),
    "not from 0": (
        _break({(0, "sample"): 2}),  # cot on q0: samples 2 and 1
        ["line 2, column sample", "'q0'", "'cot'", "sample 2 but no sample 0"],
    ),
    "repeated": (
        _break(extra={**ROW, "sample": 1}),
        [f"line {5 * N + 2}", "second outcome", "'q0'", "'cot'", "(sample 1)"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_sample_column_is_one_clear_error_naming_file_and_line(tmp_path: Path, case: str) -> None:
    outcomes, fragments = MALFORMED[case]
    folder = write_world(tmp_path / "bad", sampled_tables()[0], outcomes)
    with pytest.raises(AgentBalanceError) as caught:
        ReplayWorld.load(folder)
    for fragment in [str(folder / "outcomes.csv.gz"), *fragments]:
        assert fragment in str(caught.value), f"{case}: {fragment!r} not in {caught.value}"


# ----------------------------------------------------------------------------- the real multi-sample world


def test_date_mot_agents_on_one_backbone_read_distinct_recorded_samples(shared_data: Path) -> None:
    folder = shared_data / "date-mot-dev"
    if not folder.is_dir():
        pytest.skip(f"the multi-sample replay world is absent: {folder}")
    world = ReplayWorld.load(folder)
    roles = RoleSet.load(world.default_roles)
    pot = "gpt-3.5-turbo-pot"
    assert (world.samples("date-0", pot), world.samples("date-0", "gpt-4-cot")) == (40, 8)
    recorded = pd.read_csv(folder / "outcomes.csv.gz", dtype={"answer": str}, keep_default_na=False)
    recorded = recorded[recorded["model"] == pot].set_index(["id", "sample"])
    agents = [Agent(id="s0", role=SOLVER, backbone=pot), Agent(id="s1", role=SOLVER, backbone=pot)]
    agents.append(Agent(id="d", role=DECIDER, backbone="gpt-4-cot"))
    mas = MAS(agents, [("s0", "d"), ("s1", "d")], "d")
    differ = 0
    for query in world.queries("test")[:40]:
        results = rollout_execution(world, roles, mas, query).results
        answers = [results[a].completion.answer for a in ("s0", "s1")]  # type: ignore[union-attr]
        assert answers == [recorded.loc[(query.id, s), "answer"] or None for s in (0, 1)]
        differ += answers[0] != answers[1]
    assert differ > 0, "the two samples of one backbone never disagree on 40 questions"
    whole = ReplayWorld.load(folder, split=(1.0, 0.0, 0.0))
    assert whole.accuracy(pot) == pytest.approx(recorded["correct"].mean())  # K = 40 everywhere: per-sample accuracy
