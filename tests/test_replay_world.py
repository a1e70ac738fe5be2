"""Replay world: recorded answers in, reliability-weighted combination, exact usage, clear errors on bad folders."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleKind, RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.worlds.base import AgentCall, Completion, Upstream, World, estimate_prompt_tokens
from agentbalance.worlds.replay import Ballot, ReplayWorld, WeightedVote
from tests.conftest import REPLAY_WORLDS

GENERAL = RoleSet.load("general")
CODE = RoleSet.load("code")
LETTERS = "ABCD"
N = 20
MODELS_YAML = """\
backbones:
  - {name: alpha, family: a, reasoning: false, params_active_b: 8, price_in: 0.2, price_out: 0.6,
     scores: {mmlu_pro: 70}}
  - {name: beta, family: b, reasoning: false, decode_tps: 50, ttft_s: 0.2, price_in: 1.0, price_out: 2.0}
  - {name: gamma, family: c, reasoning: false, params_active_b: 1, price_in: 0.05, price_out: 0.1}
  - {name: delta, family: d, reasoning: false, params_active_b: 3, price_in: 0.1, price_out: 0.1}
"""
MODELS = ("alpha", "beta", "gamma", "delta")


# ----------------------------------------------------------------------------- a tiny world, written by the test


def mcq_tables() -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """20 four-option questions; alpha and beta strong, gamma weak, delta abstains on odd questions.

    Wrong answers differ by backbone (alpha: gold+2, beta: gold+3, gamma: gold+1), so votes are unambiguous.
    """
    questions = [
        {
            "id": f"q{i:02d}",
            "domain": "biology" if i % 2 else "physics",
            "question": f"Question number {i}: which option is right?",
            "choices": [f"option {c} of {i}" for c in LETTERS],
            "answer": LETTERS[i % 4],
            "source": "test-source",
        }
        for i in range(N)
    ]
    rows = []
    for i in range(N):
        gold = i % 4
        right = {
            "alpha": i not in (5, 15),
            "beta": i not in (7, 15),
            "gamma": i % 4 == 0,
            "delta": i % 2 == 0,
        }
        wrong = {"alpha": LETTERS[(gold + 2) % 4], "beta": LETTERS[(gold + 3) % 4], "gamma": LETTERS[(gold + 1) % 4]}
        for j, model in enumerate(MODELS):
            answer = LETTERS[gold] if right[model] else wrong.get(model, "")  # delta's misses: unparsed, abstains
            rows.append(
                {
                    "id": f"q{i:02d}",
                    "model": model,
                    "answer": answer,
                    "correct": int(right[model]),
                    "completion_tokens": 100 + 10 * j + i,
                    "cost_usd": 0.001 * (i + 1) if model == "alpha" else None,  # recorded cost for alpha only
                }
            )
    return questions, pd.DataFrame(rows)


def write_world(
    folder: Path, questions: Sequence[dict[str, Any]], outcomes: pd.DataFrame, models: str = MODELS_YAML
) -> Path:
    """The real format: questions.jsonl, gzip outcomes.csv.gz (written by pandas), models.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    outcomes.to_csv(folder / "outcomes.csv.gz", index=False, compression="gzip")
    (folder / "models.yaml").write_text(models, encoding="utf-8")
    return folder


@pytest.fixture
def mcq_folder(tmp_path: Path) -> Path:
    return write_world(tmp_path / "tiny-mcq", *mcq_tables())


@pytest.fixture
def mcq_world(mcq_folder: Path) -> ReplayWorld:
    return ReplayWorld.load(mcq_folder)


def code_tables() -> tuple[list[dict[str, Any]], pd.DataFrame]:
    questions = [
        {"id": f"c{i:02d}", "domain": "mbpp", "question": f"Write a function f{i}.", "choices": None, "answer": None}
        for i in range(N)
    ]
    right = {
        "alpha": lambda i: i not in (3, 11),
        "beta": lambda i: i % 3 != 0,
        "gamma": lambda i: i % 4 == 0,
        "delta": lambda i: i % 2 == 0,
    }
    rows = [
        {
            "id": f"c{i:02d}",
            "model": model,
            "answer": "",
            "correct": int(right[model](i)),
            "completion_tokens": 200 + i,
            "cost_usd": None,
        }
        for i in range(N)
        for model in MODELS
    ]
    return questions, pd.DataFrame(rows)


@pytest.fixture
def code_world(tmp_path: Path) -> ReplayWorld:
    return ReplayWorld.load(write_world(tmp_path / "tiny-code", *code_tables()))


def question(world: ReplayWorld, index: int) -> Query:
    return world.questions[index]


def call(
    world: ReplayWorld,
    roles: RoleSet,
    role: str,
    backbone: str,
    query: Query,
    inputs: Sequence[Upstream] = (),
    agent_id: str = "a",
) -> Completion:
    """One agent call, assembled as the runner assembles it."""
    agent = Agent(id=agent_id, role=role, backbone=backbone)
    agent_call = AgentCall(agent, roles[role], world.catalog[backbone], query, tuple(inputs))
    return asyncio.run(world.complete(agent_call))


def upstream(
    world: ReplayWorld, roles: RoleSet, role: str, backbone: str, query: Query, inputs: Sequence[Upstream] = ()
) -> Upstream:
    completion = call(world, roles, role, backbone, query, inputs, agent_id=f"{backbone}-{role}")
    return Upstream(f"{backbone}-{role}", roles[role], world.catalog[backbone], completion)


def base_prompt_tokens(world: ReplayWorld, roles: RoleSet, role: str, query: Query) -> int:
    """What an agent reads with no inputs: its role prompt and the question."""
    agent = Agent(id="a", role=role, backbone=world.catalog.names[0])
    return estimate_prompt_tokens(AgentCall(agent, roles[role], world.catalog.backbones[0], query))


# ----------------------------------------------------------------------------- loading and the World protocol


def test_a_loaded_folder_is_a_world_with_queries_in_file_order(mcq_world: ReplayWorld) -> None:
    assert isinstance(mcq_world, World)
    assert mcq_world.name == "replay:tiny-mcq" and mcq_world.simulated is False
    assert mcq_world.catalog.names == list(MODELS)
    assert [q.id for q in mcq_world.questions] == [f"q{i:02d}" for i in range(N)]
    first = mcq_world.questions[1]
    assert (
        first.domain == "biology"
        and first.answer == "B"
        and first.choices == tuple(f"option {c} of 1" for c in LETTERS)
    )
    assert first.metadata == {"source": "test-source"}
    assert (mcq_world.kind, mcq_world.default_roles) == ("mcq", "general")


def test_world_kind_and_default_roles_follow_the_recorded_answers(tmp_path: Path, code_world: ReplayWorld) -> None:
    assert (code_world.kind, code_world.default_roles) == ("code", "code")
    questions = [{"id": f"n{i}", "question": f"{i} * 1000 = ?", "answer": f"{i},000"} for i in range(1, 6)]
    rows = [
        {"id": f"n{i}", "model": m, "answer": f"{i}000", "correct": 1, "completion_tokens": 50, "cost_usd": None}
        for i in range(1, 6)
        for m in MODELS
    ]
    numeric = ReplayWorld.load(write_world(tmp_path / "numeric", questions, pd.DataFrame(rows)))
    assert (numeric.kind, numeric.default_roles) == ("numeric", "math")
    completion = call(numeric, RoleSet.load("math"), "Mathematician", "alpha", numeric.questions[2])
    assert completion.answer == "3000" and completion.correct is True, "'3,000' and '3000' are the same number"


# ----------------------------------------------------------------------------- splits and reliabilities


def test_split_is_deterministic_disjoint_and_complete(mcq_folder: Path, tmp_path: Path) -> None:
    world = ReplayWorld.load(mcq_folder, seed=7)
    again = ReplayWorld.load(mcq_folder, seed=7)
    other = ReplayWorld.load(mcq_folder, seed=8)
    parts = {name: world.split_ids(name) for name in ("train", "val", "test")}
    assert [len(ids) for ids in parts.values()] == [12, 4, 4]
    assert set().union(*parts.values()) == {q.id for q in world.questions}
    assert sum(len(ids) for ids in parts.values()) == N, "disjoint"
    assert all(again.split_ids(name) == ids for name, ids in parts.items())
    assert other.split_ids("test") != parts["test"]
    assert [q.id for q in world.queries("val")] == parts["val"]
    questions, outcomes = mcq_tables()
    shuffled = ReplayWorld.load(write_world(tmp_path / "shuffled", questions[::-1], outcomes), seed=7)
    assert shuffled.split_ids("test") == parts["test"], "a function of the ids, not of file order"
    with pytest.raises(AgentBalanceError, match="unknown split 'dev'"):
        world.split_ids("dev")


def test_the_first_questions_of_a_split_are_a_sample_of_it_not_the_first_domains_of_the_file(
    tmp_path: Path,
) -> None:
    """`--train N` takes the first N of the split: in a file grouped by domain they must still mix domains."""
    questions, outcomes = mcq_tables()
    grouped = sorted(questions, key=lambda q: q["domain"])  # every physics question, then every biology one
    world = ReplayWorld.load(write_world(tmp_path / "grouped", grouped, outcomes), seed=3)
    for name in ("train", "val", "test"):
        ids = world.split_ids(name)
        ranked = sorted(ids, key=lambda i: hashlib.sha256(f"3:{i}".encode()).hexdigest())
        assert ids == ranked, name
    first = world.queries("train")[:6]
    assert {q.domain for q in first} == {"physics", "biology"}


def test_reliabilities_come_from_the_train_split_only(mcq_world: ReplayWorld, tmp_path: Path) -> None:
    before = {m: mcq_world.reliability(m) for m in MODELS}
    questions, outcomes = mcq_tables()
    held_out = set(mcq_world.split_ids("val")) | set(mcq_world.split_ids("test"))
    flipped = outcomes.copy()
    rows = flipped["id"].isin(held_out)
    flipped.loc[rows, "correct"] = 1 - flipped.loc[rows, "correct"]
    flipped.loc[rows, "answer"] = "A"
    after = ReplayWorld.load(write_world(tmp_path / "flipped-test", questions, flipped))
    assert {m: after.reliability(m) for m in MODELS} == before
    trained = outcomes.copy()
    rows = trained["id"] == mcq_world.split_ids("train")[0]
    trained.loc[rows, "correct"] = 1 - trained.loc[rows, "correct"]
    changed = ReplayWorld.load(write_world(tmp_path / "flipped-train", questions, trained))
    assert {m: changed.reliability(m) for m in MODELS} != before, "control: a train outcome does move them"
    train = outcomes[outcomes["id"].isin(mcq_world.split_ids("train"))]
    alpha = train[train["model"] == "alpha"]["correct"]
    assert before["alpha"] == pytest.approx((alpha.sum() + 1) / (len(alpha) + 2)), "Laplace-smoothed"


def test_calibrated_catalog_adds_the_recorded_accuracy_as_a_score(mcq_world: ReplayWorld) -> None:
    calibrated = mcq_world.calibrated_catalog()
    assert calibrated["alpha"].scores["mmlu_pro"] == 70, "published scores are kept"
    for model in MODELS:
        assert calibrated[model].scores["replay"] == pytest.approx(100 * mcq_world.accuracy(model, "train"))
    assert calibrated["gamma"].scores["replay"] < calibrated["alpha"].scores["replay"]
    assert calibrated.common_benchmarks() == ["replay"], "Perf is defined even where models.yaml has no scores"
    assert "replay" not in mcq_world.catalog["alpha"].scores, "the world's own catalog is unchanged"


def test_another_catalog_reprices_the_same_recording(mcq_world: ReplayWorld) -> None:
    cheaper = Catalog([mcq_world.catalog["beta"].model_copy(update={"price_in": 0.0, "price_out": 0.0})], source="mine")
    repriced = mcq_world.with_catalog(cheaper)
    assert repriced.catalog.names == ["beta"] and mcq_world.catalog.names == list(MODELS)
    query = question(repriced, 1)
    completion = call(repriced, GENERAL, "Scientist", "beta", query)
    assert completion.cost_usd == 0 and completion.answer == "B"
    assert repriced.reliability("beta") == mcq_world.reliability("beta"), "the same recording and split"
    stranger = Backbone(name="ghost", family="g", reasoning=False, params_active_b=1, price_in=1, price_out=1)
    with pytest.raises(
        AgentBalanceError, match=r"mine: backbone\(s\) ghost have no recorded outcomes in replay:tiny-mcq"
    ):
        mcq_world.with_catalog(Catalog([stranger], source="mine"))


def test_a_query_given_by_id_resolves_to_the_recorded_question(mcq_world: ReplayWorld) -> None:
    resolved = mcq_world.resolve_query(Query(id="q03", question="(recorded question q03)"))
    assert resolved == mcq_world.questions[3] and resolved.answer == "D"
    with pytest.raises(AgentBalanceError, match="'q77' is not recorded"):
        mcq_world.resolve_query(Query(id="q77", question="?"))


# ----------------------------------------------------------------------------- one agent


def test_a_single_agent_gives_exactly_its_recording(mcq_world: ReplayWorld) -> None:
    _, outcomes = mcq_tables()
    recorded = outcomes.set_index(["id", "model"])
    for index in (1, 5):
        query = question(mcq_world, index)
        alpha = call(mcq_world, GENERAL, "Knowledgeable Expert", "alpha", query)
        row = recorded.loc[(query.id, "alpha")]
        assert alpha.answer == row["answer"] and alpha.correct is bool(row["correct"])
        assert alpha.text == f"Answer: {row['answer']}"
        assert alpha.completion_tokens == row["completion_tokens"] and alpha.reasoning_tokens == 0
        assert alpha.prompt_tokens == base_prompt_tokens(mcq_world, GENERAL, "Knowledgeable Expert", query)
        assert alpha.cost_usd == pytest.approx(row["cost_usd"]), "the recorded cost, where present"
        assert alpha.latency_s == pytest.approx(0.5 + row["completion_tokens"] / 200), "default TTFT + 1600/8 tok/s"
        beta = call(mcq_world, GENERAL, "Scientist", "beta", query)
        tokens = recorded.loc[(query.id, "beta"), "completion_tokens"]
        assert beta.cost_usd == pytest.approx((beta.prompt_tokens * 1.0 + tokens * 2.0) / 1e6), "catalog prices"
        assert beta.latency_s == pytest.approx(0.2 + tokens / 50), "the catalog's own TTFT and decode_tps"


def test_an_unparsed_answer_is_no_answer(mcq_world: ReplayWorld) -> None:
    completion = call(mcq_world, GENERAL, "Scientist", "delta", question(mcq_world, 3))
    assert completion.answer is None and completion.correct is False and completion.text == "Answer: (none)"


def test_recorded_latency_is_used_where_the_world_has_it(tmp_path: Path) -> None:
    questions, outcomes = mcq_tables()
    outcomes["latency_s"] = [2.5 if model == "alpha" else None for model in outcomes["model"]]
    world = ReplayWorld.load(write_world(tmp_path / "timed", questions, outcomes))
    query = question(world, 0)
    assert call(world, GENERAL, "Scientist", "alpha", query).latency_s == 2.5
    tokens = outcomes[(outcomes["id"] == query.id) & (outcomes["model"] == "beta")]["completion_tokens"].item()
    assert call(world, GENERAL, "Scientist", "beta", query).latency_s == pytest.approx(0.2 + tokens / 50)


def test_without_gold_the_recorded_grade_of_the_same_answer_counts(tmp_path: Path) -> None:
    questions, outcomes = mcq_tables()
    questions[1]["answer"] = None
    world = ReplayWorld.load(write_world(tmp_path / "no-gold", questions, outcomes))
    query = question(world, 1)
    assert call(world, GENERAL, "Scientist", "alpha", query).correct is True
    assert call(world, GENERAL, "Scientist", "gamma", query).correct is False
    # no answer and no gold: the recording still graded delta's abstention (wrong), so the answer is graded
    assert call(world, GENERAL, "Scientist", "delta", query).correct is False


# ----------------------------------------------------------------------------- the combination rule


def test_two_reliable_backbones_agreeing_override_a_weak_one(mcq_world: ReplayWorld) -> None:
    query = question(mcq_world, 1)  # alpha and beta right, gamma wrong
    inputs = [
        upstream(mcq_world, GENERAL, role, b, query) for role, b in (("Historian", "alpha"), ("Scientist", "beta"))
    ]
    alone = call(mcq_world, GENERAL, "Economist", "gamma", query)
    combined = call(mcq_world, GENERAL, "Economist", "gamma", query, inputs)
    assert alone.answer == "C" and alone.correct is False
    assert combined.answer == "B" and combined.correct is True
    assert combined.completion_tokens == alone.completion_tokens, "the agent's own generation, not its inputs'"
    upstream_tokens = sum(u.completion.completion_tokens for u in inputs)
    assert combined.prompt_tokens == alone.prompt_tokens + upstream_tokens
    assert combined.cost_usd == pytest.approx(alone.cost_usd + upstream_tokens * 0.05 / 1e6)


def test_recorded_cost_grows_by_the_upstream_text_at_the_input_price(mcq_world: ReplayWorld) -> None:
    query = question(mcq_world, 2)
    weak = upstream(mcq_world, GENERAL, "Scientist", "gamma", query)
    critic = call(mcq_world, GENERAL, "Inspector", "alpha", query, [weak])
    assert critic.cost_usd == pytest.approx(0.003 + weak.completion.completion_tokens * 0.2 / 1e6)


def test_a_strong_critic_keeps_its_own_answer_against_one_weak_input(mcq_world: ReplayWorld) -> None:
    query = question(mcq_world, 1)
    weak = upstream(mcq_world, GENERAL, "Scientist", "gamma", query)
    critic = call(mcq_world, GENERAL, "Inspector", "alpha", query, [weak])
    assert weak.completion.answer == "C" and critic.answer == "B" and critic.correct is True


def test_the_rule_is_swappable_a_self_doubting_critic_adopts_its_input(mcq_folder: Path) -> None:
    world = ReplayWorld.load(mcq_folder, rule=WeightedVote(self_weight_critic=0.01))
    query = question(world, 1)
    weak = upstream(world, GENERAL, "Scientist", "gamma", query)
    assert call(world, GENERAL, "Inspector", "alpha", query, [weak]).answer == "C"


def test_the_decision_agent_votes_over_its_inputs_and_its_own_answer(mcq_world: ReplayWorld) -> None:
    odd = question(mcq_world, 3)  # the decision backbone delta abstains; alpha right, gamma wrong
    inputs = [upstream(mcq_world, GENERAL, "Scientist", b, odd) for b in ("alpha", "gamma")]
    decided = call(mcq_world, GENERAL, "Decision Maker", "delta", odd, inputs)
    assert decided.answer == "D" and decided.correct is True
    even = question(mcq_world, 2)  # delta right, one weaker input (gamma) wrong
    assert mcq_world.reliability("delta") > mcq_world.reliability("gamma")
    weak = upstream(mcq_world, GENERAL, "Scientist", "gamma", even)
    decided = call(mcq_world, GENERAL, "Decision Maker", "delta", even, [weak])
    assert weak.completion.answer == "D" and decided.answer == "C"
    nobody = call(
        mcq_world, GENERAL, "Decision Maker", "delta", odd, [upstream(mcq_world, GENERAL, "Scientist", "delta", odd)]
    )
    assert nobody.answer is None and nobody.correct is False


def test_weighted_vote_abstentions_and_ties_are_deterministic() -> None:
    rule = WeightedVote()
    assert rule.vote([Ballot(None, "x", 0.9), Ballot("", "y", 0.9)], RoleKind.DECISION, 4) is None
    assert rule.vote([Ballot("B", "x", 0.8), Ballot("A", "y", 0.8)], RoleKind.DECISION, 4) == "A", "then by string"
    strong = 1 / (1 + math.exp(-0.1))  # weight exactly 0.1 with two options; each r=0.3 ballot is floored at 0.05
    ballots = [Ballot("Z", "s", strong), Ballot("A", "w1", 0.3), Ballot("A", "w2", 0.3)]
    assert rule.vote(ballots, RoleKind.DECISION, 2) == "Z", "equal totals: the largest single weight wins"
    assert rule.weight(Ballot("A", "w", 0.3), RoleKind.CRITIC, 2) == pytest.approx(0.05), "never below the floor"
    assert rule.weight(Ballot("A", "w", 0.75, own=True), RoleKind.CRITIC, 4) == pytest.approx(
        1.5 * (math.log(3) + math.log(3))
    )


# ----------------------------------------------------------------------------- code worlds


def test_code_agents_select_the_most_reliable_solution_and_its_recorded_result_counts(code_world: ReplayWorld) -> None:
    _, outcomes = code_tables()
    recorded = outcomes.set_index(["id", "model"])["correct"]
    for query in code_world.questions:
        inputs = [upstream(code_world, CODE, "Programming Expert", b, query) for b in ("beta", "alpha")]
        assert [u.completion.answer for u in inputs] == ["solution:beta", "solution:alpha"]
        decided = call(code_world, CODE, "Decision Maker", "gamma", query, inputs)
        best = max(("alpha", "beta", "gamma"), key=code_world.reliability)
        assert best == "alpha"
        assert decided.answer == "solution:alpha" and decided.text == "Solution from alpha"
        assert decided.correct is bool(recorded[(query.id, "alpha")])
        assert decided.completion_tokens == 200 + int(query.id[1:]), "its own recorded length"


def test_a_passed_on_solution_keeps_its_author(code_world: ReplayWorld) -> None:
    query = code_world.questions[3]  # every backbone failed this one
    solver = upstream(code_world, CODE, "Programming Expert", "alpha", query)
    reviewer = upstream(code_world, CODE, "Code Reviewer", "gamma", query, [solver])
    assert reviewer.completion.answer == "solution:alpha", "the weak reviewer passes on alpha's solution"
    decided = call(code_world, CODE, "Decision Maker", "delta", query, [reviewer])
    assert decided.answer == "solution:alpha" and decided.correct is False, "judged as alpha's, not gamma's"


# ----------------------------------------------------------------------------- a whole MAS through the runner


def test_a_mas_run_sums_its_agents_and_its_latency_is_the_critical_path(mcq_world: ReplayWorld) -> None:
    agents = [
        Agent(id="s0", role="Knowledgeable Expert", backbone="alpha"),
        Agent(id="s1", role="Scientist", backbone="beta"),
        Agent(id="c", role="Inspector", backbone="gamma"),
        Agent(id="d", role="Decision Maker", backbone="delta"),
    ]
    mas = MAS(agents, [("s0", "c"), ("s1", "c"), ("c", "d"), ("s1", "d")], "d")
    traces = Runner(mcq_world, GENERAL).run_sync([(mas, q) for q in mcq_world.questions])
    for trace, query in zip(traces, mcq_world.questions, strict=True):
        by_id = {a.id: a for a in trace.agents}
        assert trace.world == "replay:tiny-mcq" and trace.failures == 0
        assert trace.cost_usd == pytest.approx(sum(a.cost_usd for a in trace.agents))
        assert trace.prompt_tokens == sum(a.prompt_tokens for a in trace.agents)
        assert trace.completion_tokens == sum(a.completion_tokens for a in trace.agents)
        lat = {k: a.latency_s for k, a in by_id.items()}
        assert trace.latency_s == pytest.approx(max(lat["s0"], lat["s1"]) + lat["c"] + lat["d"])
        assert trace.correct is (trace.answer == query.answer)
        reads = by_id["c"].completion_tokens + by_id["s1"].completion_tokens
        assert by_id["d"].prompt_tokens == base_prompt_tokens(mcq_world, GENERAL, "Decision Maker", query) + reads
    accuracy = sum(bool(t.correct) for t in traces) / N
    assert accuracy >= 0.9, "two strong solvers carry the weak critic and the abstaining decision agent"
    again = Runner(mcq_world, GENERAL).run_sync([(mas, q) for q in mcq_world.questions])
    assert [t.to_json() | {"wall_s": 0} for t in again] == [t.to_json() | {"wall_s": 0} for t in traces]


# ----------------------------------------------------------------------------- errors


def test_unknown_query_or_backbone_is_a_user_error(mcq_world: ReplayWorld) -> None:
    stranger = Query(id="not-recorded", question="What?")
    with pytest.raises(AgentBalanceError, match=r"question id 'not-recorded' is not recorded in .*questions\.jsonl"):
        call(mcq_world, GENERAL, "Scientist", "alpha", stranger)
    ghost = Backbone(name="ghost", family="g", reasoning=False, params_active_b=1, price_in=1, price_out=1)
    ghost_call = AgentCall(
        Agent(id="a", role="Scientist", backbone="ghost"), GENERAL["Scientist"], ghost, question(mcq_world, 0)
    )
    with pytest.raises(AgentBalanceError, match=r"backbone 'ghost' has no recorded outcomes"):
        asyncio.run(mcq_world.complete(ghost_call))


def test_a_missing_question_model_pair_is_an_error_not_a_zero(tmp_path: Path) -> None:
    questions, outcomes = mcq_tables()
    outcomes = outcomes[~((outcomes["id"] == "q04") & (outcomes["model"] == "beta"))]
    world = ReplayWorld.load(write_world(tmp_path / "gappy", questions, outcomes))
    with pytest.raises(AgentBalanceError, match="no recorded outcome of backbone 'beta' on question 'q04'"):
        call(world, GENERAL, "Scientist", "beta", question(world, 4))


Breaker = Callable[[Path], None]


def _drop_file(name: str) -> Breaker:
    return lambda folder: (folder / name).unlink()


def _rewrite_outcomes(change: Callable[[pd.DataFrame], pd.DataFrame]) -> Breaker:
    def breaker(folder: Path) -> None:
        _, outcomes = mcq_tables()
        change(outcomes).to_csv(folder / "outcomes.csv.gz", index=False, compression="gzip")

    return breaker


def _rewrite_questions(change: Callable[[list[str]], list[str]]) -> Breaker:
    def breaker(folder: Path) -> None:
        lines = [json.dumps(q) for q in mcq_tables()[0]]
        (folder / "questions.jsonl").write_text("\n".join(change(lines)) + "\n", encoding="utf-8")

    return breaker


def _truncated_gzip(folder: Path) -> None:
    data = (folder / "outcomes.csv.gz").read_bytes()
    (folder / "outcomes.csv.gz").write_bytes(data[: len(data) // 2])


def _with_row(outcomes: pd.DataFrame, **row: Any) -> pd.DataFrame:
    return pd.concat([outcomes, pd.DataFrame([row])], ignore_index=True)


MALFORMED = {
    "missing questions": (_drop_file("questions.jsonl"), ["missing file", "questions.jsonl"]),
    "missing outcomes": (_drop_file("outcomes.csv.gz"), ["missing file", "outcomes.csv.gz"]),
    "missing models": (_drop_file("models.yaml"), ["missing file", "models.yaml"]),
    "missing column": (
        _rewrite_outcomes(lambda o: o.drop(columns=["completion_tokens"])),
        ["outcomes.csv.gz", "missing column(s) completion_tokens"],
    ),
    "misspelt column": (
        _rewrite_outcomes(lambda o: o.rename(columns={"cost_usd": "cost"})),
        ["outcomes.csv.gz", "cost_usd"],
    ),
    "not gzip": (
        lambda folder: (folder / "outcomes.csv.gz").write_text("id,model\nq00,alpha\n", encoding="utf-8"),
        ["outcomes.csv.gz", "gzip"],
    ),
    "truncated gzip": (_truncated_gzip, ["outcomes.csv.gz"]),
    "bad correct": (
        _rewrite_outcomes(lambda o: o.assign(correct=["yes" if i == 5 else c for i, c in enumerate(o["correct"])])),
        ["outcomes.csv.gz", "line 7", "column correct", "'yes'"],
    ),
    "negative tokens": (
        _rewrite_outcomes(lambda o: o.assign(completion_tokens=-o["completion_tokens"])),
        ["outcomes.csv.gz", "line 2", "completion_tokens"],
    ),
    "bad JSON line": (
        _rewrite_questions(lambda lines: [*lines[:2], '{"id": "q02", "question": ', *lines[3:]]),
        ["questions.jsonl", "line 3", "malformed JSON"],
    ),
    "invalid question": (
        _rewrite_questions(lambda lines: [*lines[:3], json.dumps({"id": "q03", "question": ""}), *lines[4:]]),
        ["questions.jsonl", "line 4", "question"],
    ),
    "unknown question key": (
        _rewrite_questions(
            lambda lines: [json.dumps({"id": "q00", "question": "?", "choises": ["a", "b"]}), *lines[1:]]
        ),
        ["questions.jsonl", "line 1", "choises"],
    ),
    "duplicate question id": (
        _rewrite_questions(lambda lines: [*lines, lines[4]]),
        ["questions.jsonl", f"line {N + 1}", "duplicate question id 'q04'", "first on line 5"],
    ),
    "model not in models.yaml": (
        _rewrite_outcomes(lambda o: _with_row(o, id="q00", model="omega", answer="A", correct=1, completion_tokens=1)),
        ["outcomes.csv.gz", "omega", "models.yaml"],
    ),
    "unknown question in outcomes": (
        _rewrite_outcomes(lambda o: _with_row(o, id="q99", model="alpha", answer="A", correct=1, completion_tokens=1)),
        ["outcomes.csv.gz", f"line {4 * N + 2}", "'q99'", "questions.jsonl"],
    ),
    "duplicate outcome": (
        _rewrite_outcomes(lambda o: _with_row(o, id="q00", model="alpha", answer="A", correct=1, completion_tokens=1)),
        ["outcomes.csv.gz", f"line {4 * N + 2}", "second outcome", "'q00'", "'alpha'"],
    ),
    "backbone never recorded": (
        _rewrite_outcomes(lambda o: o[o["model"] != "delta"]),
        ["models.yaml", "delta", "no outcome"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_folder_is_one_clear_error_naming_the_file(mcq_folder: Path, case: str) -> None:
    breaker, fragments = MALFORMED[case]
    breaker(mcq_folder)
    with pytest.raises(AgentBalanceError) as caught:
        ReplayWorld.load(mcq_folder)
    for fragment in fragments:
        assert fragment in str(caught.value), f"{case}: {fragment!r} not in {caught.value}"


def test_a_missing_folder_or_a_bad_split_is_a_user_error(tmp_path: Path, mcq_folder: Path) -> None:
    with pytest.raises(AgentBalanceError, match="replay world folder not found"):
        ReplayWorld.load(tmp_path / "nowhere")
    with pytest.raises(AgentBalanceError, match="summing to 1"):
        ReplayWorld.load(mcq_folder, split=(0.5, 0.5, 0.5))


def test_gzip_written_by_hand_loads_too(mcq_folder: Path) -> None:
    _, outcomes = mcq_tables()
    with gzip.open(mcq_folder / "outcomes.csv.gz", "wt", encoding="utf-8") as handle:
        outcomes.to_csv(handle, index=False)
    assert ReplayWorld.load(mcq_folder).reliability("alpha") > 0.5


# ----------------------------------------------------------------------------- the real worlds (../shared/data)

REAL = {
    "gsm8k-reasoning-dev": (349, 12, "numeric", "math"),
    "mmlu-pro-dev": (5659, 25, "mcq", "general"),
    "routerbench-arc-challenge": (1456, 11, "mcq", "general"),
    "routerbench-mbpp": (427, 11, "code", "code"),
    "routerbench-winograde": (1267, 11, "mcq", "general"),
}


@pytest.mark.parametrize("name", REPLAY_WORLDS)
def test_real_world_loads_with_its_facts_and_train_accuracy_tracks_the_recording(shared_data: Path, name: str) -> None:
    world = ReplayWorld.load(shared_data / name)
    questions, models, kind, roles = REAL[name]
    assert (len(world.questions), len(world.catalog), world.kind, world.default_roles) == (
        questions,
        models,
        kind,
        roles,
    )
    assert world.name == f"replay:{name}"
    sizes = [len(world.split_ids(s)) for s in ("train", "val", "test")]
    assert sizes[0] == round(0.6 * questions) and sum(sizes) == questions
    outcomes = pd.read_csv(shared_data / name / "outcomes.csv.gz", keep_default_na=False, dtype={"id": str})
    overall = outcomes.groupby("model")["correct"].mean()
    tolerance = 4 * 0.5 * math.sqrt(1 / sizes[0] - 1 / questions)  # 4 sd of a subsample mean
    for model in world.catalog.names:
        assert abs(world.accuracy(model, "train") - overall[model]) < tolerance, model
    calibrated = world.calibrated_catalog()
    assert all(0 <= b.scores["replay"] <= 100 for b in calibrated.backbones)


def test_mmlu_pro_split_and_single_agents_replay_the_recording(shared_data: Path) -> None:
    folder = shared_data / "mmlu-pro-dev"
    world = ReplayWorld.load(folder)
    assert [len(world.split_ids(s)) for s in ("train", "val", "test")] == [3395, 1132, 1132]
    assert ReplayWorld.load(folder).split_ids("test") == world.split_ids("test")
    assert set(ReplayWorld.load(folder, seed=1).split_ids("test")) != set(world.split_ids("test"))
    domains = {q.domain for q in world.questions}
    for split, first in (("train", 600), ("val", 200), ("test", 400)):  # the default sizes of `build`
        assert {q.domain for q in world.queries(split)[:first]} == domains, f"first {first} of {split}"
    outcomes = pd.read_csv(folder / "outcomes.csv.gz", keep_default_na=False, dtype={"id": str, "answer": str})
    recorded = outcomes.set_index(["id", "model"])
    for query in world.queries("test")[:25]:
        for backbone in ("gemini-1.5-flash-002", "Llama-2-7b-hf"):
            completion = call(world, GENERAL, "Knowledgeable Expert", backbone, query)
            row = recorded.loc[(query.id, backbone)]
            assert completion.answer == (row["answer"] or None)
            assert completion.correct is bool(row["correct"])
            assert completion.completion_tokens == row["completion_tokens"]
    assert world.questions[0].metadata["source"].startswith("ori_mmlu-")


def test_calibration_uses_the_recorded_completion_lengths(mcq_world: ReplayWorld) -> None:
    calibrated = mcq_world.calibrated_catalog()
    for backbone in calibrated:
        assert backbone.typical_completion_tokens == mcq_world.median_completion_tokens(backbone.name)
        assert backbone.completion_tokens(calibrated.assumptions) == backbone.typical_completion_tokens


def test_calibrated_gsm8k_keeps_the_terse_reasoning_model_on_the_front(shared_data: Path) -> None:
    from agentbalance.pooling import build_pools

    world = ReplayWorld.load(shared_data / "gsm8k-reasoning-dev")
    calibrated = build_pools(world.calibrated_catalog())
    assert "DeepSeek-R1-Distill-Qwen-32B" in calibrated.kept, "it writes 3.6x fewer tokens than QwQ-32B"
