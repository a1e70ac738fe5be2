"""The LLM judge: reading verdicts, rubrics, and grading through a live world in front of the loopback fake
(what is sent, caching, its own accounting, failures never turned into grades)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, Turn
from agentbalance.worlds.judge import (
    SINGLE_ANSWER,
    WITH_REFERENCE,
    Judge,
    Rubric,
    load_rubric,
    parse_rating,
)
from tests.loopback_server import Fault, LoopbackServer
from tests.test_live_world import KEY, live, write_catalog

OPEN = Query(id="open-1", question="How do I keep basil alive indoors?")  # no gold: only a judge can grade it
WITH_ANSWER = Query(id="ref-1", question="What is the capital of Australia?", answer="Canberra")


@pytest.mark.parametrize(
    ("verdict", "rating"),
    [
        ("Clear and correct. Rating: [[8]]", 8.0),
        ("Rating: [[7.5]]", 7.5),
        ("First [[3]]... on reflection the answer holds up. Rating: [[9]]", 9.0),  # the last one counts
        ("Rating: 6", 6.0),
        ("score = 4", 4.0),
        ("I would give it 7/10.", 7.0),
        ("I would give it 7 out of 10.", 7.0),
        ("A fine answer, well argued.", None),
        ("", None),
    ],
)
def test_a_verdict_gives_its_last_stated_rating_or_none(verdict: str, rating: float | None) -> None:
    assert parse_rating(verdict) == rating


def test_a_rating_maps_linearly_onto_0_to_1_and_one_off_the_scale_is_no_grade() -> None:
    assert SINGLE_ANSWER.score("Rating: [[1]]") == 0.0 and SINGLE_ANSWER.score("Rating: [[10]]") == 1.0
    assert SINGLE_ANSWER.score("Rating: [[4]]") == pytest.approx(1 / 3)
    assert SINGLE_ANSWER.score("Rating: [[11]]") is None and SINGLE_ANSWER.score("Rating: [[0]]") is None
    assert SINGLE_ANSWER.score("no rating at all") is None


def test_a_rubric_file_is_read_and_a_bad_one_is_a_clear_error(tmp_path: Path) -> None:
    good = tmp_path / "rubric.yaml"
    good.write_text(
        "system: 'Grade the kindness of the answer. End with Rating: [[N]], N from 0 to 4.'\n"
        "prompt: 'Q: {question}\\nA: {answer}'\nscale: [0, 4]\n",
        encoding="utf-8",
    )
    rubric = load_rubric(good)
    assert (rubric.low, rubric.high, rubric.uses_reference) == (0.0, 4.0, False)
    assert rubric.score("Rating: [[3]]") == 0.75
    for body, expected in [
        ("system: x\nprompt: 'only {question}'\n", r"lacks \{answer\}"),
        ("system: x\nprompt: '{question} {answer} {gold}'\n", r"\{gold\} is not one of"),
        ("system: x\nprompt: '{question} {answer}'\nscale: [5, 1]\n", "scale must rise"),
        ("system: x\nprompt: '{question} {answer}'\nscale: 10\n", r"`scale` must be \[LOW, HIGH\]"),
        ("prompt: '{question} {answer}'\n", "`system` must be a non-empty text"),
        ("system: x\nprompt: '{question} {answer}'\ncolour: red\n", r"unknown keys \['colour'\]"),
        ("- a list\n", "expected a mapping"),
    ]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body, encoding="utf-8")
        with pytest.raises(AgentBalanceError, match=expected) as raised:
            load_rubric(bad)
        assert str(bad) in str(raised.value)
    with pytest.raises(AgentBalanceError, match="cannot read it"):
        load_rubric(tmp_path / "missing.yaml")


def verdicts(text: str) -> Any:
    """A loopback responder: every call answers `text`."""
    return lambda body: text


def test_the_judge_grades_an_open_answer_sends_the_rubric_at_temperature_0_and_counts_its_own_cost(
    tmp_path: Path,
) -> None:
    catalog = write_catalog(tmp_path)
    with LoopbackServer(api_keys={KEY}, responder=verdicts("Helpful and accurate. Rating: [[8]]")) as server:
        judge = Judge(live(catalog, server, tmp_path / "cache"), catalog["think"])
        verdict = asyncio.run(judge.grade(OPEN, "Give it sun and let the soil dry between waterings."))
        assert verdict.score == pytest.approx(7 / 9) and verdict.error is None and not verdict.cached
        (request,) = server.requests
        system, user = request.body["messages"]  # type: ignore[index]
        assert system["content"] == SINGLE_ANSWER.system and "Rating: [[N]]" in system["content"]
        assert OPEN.question in user["content"] and "let the soil dry" in user["content"]
        assert request.body.get("temperature") == 0  # type: ignore[union-attr]
        assert judge.stats.calls == 1 and judge.stats.cost_usd == judge.stats.paid_usd == verdict.cost_usd > 0

        again = Judge(live(catalog, server, tmp_path / "cache"), catalog["think"])
        cached = asyncio.run(again.grade(OPEN, "Give it sun and let the soil dry between waterings."))
        assert cached.cached and cached.score == verdict.score and len(server.requests) == 1  # not asked twice
        assert again.stats.cached == 1 and again.stats.paid_usd == 0 and again.stats.cost_usd == verdict.cost_usd


def test_a_question_with_an_answer_is_judged_against_it_and_a_conversation_is_shown_to_the_judge(
    tmp_path: Path,
) -> None:
    catalog = write_catalog(tmp_path)
    with LoopbackServer(api_keys={KEY}, responder=verdicts("It names Sydney, which is wrong. Rating: [[2]]")) as server:
        judge = Judge(live(catalog, server, tmp_path / "cache"), catalog["tiny"])
        verdict = asyncio.run(judge.grade(WITH_ANSWER, "Sydney"))
        assert verdict.score == pytest.approx(1 / 9)
        system, user = server.requests[-1].body["messages"]  # type: ignore[index]
        assert system["content"] == WITH_REFERENCE.system and "Canberra" in user["content"]

        talk = OPEN.model_copy(update={"context": (Turn(role="system", content="You are a gardening helper."),)})
        asyncio.run(judge.grade(talk, "Water it."))
        assert "You are a gardening helper." in server.requests[-1].body["messages"][1]["content"]  # type: ignore[index]


def test_a_failed_call_or_a_verdict_without_a_rating_is_ungraded_never_a_guess(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    with LoopbackServer(api_keys={KEY}, responder=verdicts("A thoughtful answer overall.")) as server:
        judge = Judge(live(catalog, server, tmp_path / "cache", max_retries=0), catalog["tiny"])
        unread = asyncio.run(judge.grade(OPEN, "Water it."))
        assert unread.score is None and "no rating from 1 to 10" in (unread.error or "")
        server.always("tiny-model", Fault(status=503))
        failed = asyncio.run(judge.grade(OPEN, "Water it less."))
        assert failed.score is None and "the judge's call failed" in (failed.error or "")
        assert (judge.stats.calls, judge.stats.unparsable, judge.stats.failed) == (2, 1, 1)
        assert "1 failed, 1 without a rating" in judge.stats.describe()


def test_a_refused_key_stops_the_judge_and_a_sampling_judge_is_refused(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    with LoopbackServer(api_keys={KEY}) as server:
        refused = Judge(live(catalog, server, tmp_path / "cache", api_key="sk-wrong"), catalog["tiny"])
        with pytest.raises(AgentBalanceError, match="HTTP 401"):
            asyncio.run(refused.grade(OPEN, "Water it."))
        with pytest.raises(AgentBalanceError, match="temperature 0"):
            Judge(live(catalog, server, tmp_path / "cache", temperature=0.7), catalog["tiny"])


def test_a_user_rubric_replaces_both_defaults(tmp_path: Path) -> None:
    rubric = Rubric("kindness", "Rate kindness 0-4 as Rating: [[N]].", "{question}\n---\n{answer}", 0, 4)
    catalog = write_catalog(tmp_path)
    with LoopbackServer(api_keys={KEY}, responder=verdicts("Rating: [[4]]")) as server:
        judge = Judge(live(catalog, server, tmp_path / "cache"), catalog["tiny"], rubric)
        assert asyncio.run(judge.grade(WITH_ANSWER, "Canberra")).score == 1.0
        system, user = server.requests[-1].body["messages"]  # type: ignore[index]
        assert system["content"] == rubric.system and user["content"] == f"{WITH_ANSWER.render()}\n---\nCanberra"


def judge_or_answer(body: dict[str, Any]) -> str:
    """A loopback responder: a rating for the judge's calls (its rubric as the system message; none for mid's
    answers), else an answer."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if "impartial judge" not in system:
        return f"Water it weekly, says {body['model']}."
    return "A fair answer." if "says mid-model" in body["messages"][-1]["content"] else "Useful advice. Rating: [[8]]"


def test_record_with_a_judge_writes_its_scores_and_counts_its_cost_apart(tmp_path: Path) -> None:
    """`record --judge`: every answer of a question file without gold is graded, the scores are the replay world's
    `score` column (so it trains offline), the judge's calls are reported apart, and a rerun asks nothing again."""
    import pandas as pd

    from agentbalance.worlds.replay import ReplayWorld
    from tests.conftest import agentbalance

    write_catalog(tmp_path)
    questions = tmp_path / "questions.jsonl"
    lines = [{"id": f"open-{i}", "question": f"How do I keep plant number {i} alive indoors?"} for i in range(3)]
    questions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with LoopbackServer(api_keys={KEY}, responder=judge_or_answer) as server:
        command = ["record", "--world", "live", "--base-url", server.base_url, "--task", "jsonl"]
        command += ["--data", str(questions), "--catalog", "catalog.yaml", "--cache-dir", "cache", "--out", "world"]
        done = agentbalance(*command, "--judge", "tiny", cwd=tmp_path, env={"AGENTBALANCE_API_KEY": KEY})
        assert done.returncode == 0, done.stderr
        assert "recorded 3 questions x 3 backbones" in done.stdout
        assert "judge: 9 calls (0 from the cache)" in done.stdout and "not part of the recorded costs" in done.stdout
        judged = [r for r in server.requests if "impartial judge" in r.body["messages"][0]["content"]]  # type: ignore[index]
        assert len(judged) == 9 and len(server.requests) == 18
        assert {r.body["temperature"] for r in judged} == {0}  # type: ignore[index]

        assert "3 of 9 answers could not be graded (the judge gave no rating): written ungraded" in done.stdout
        outcomes = pd.read_csv(tmp_path / "world" / "outcomes.csv.gz", keep_default_na=False)
        rated = outcomes["model"] != "mid"
        assert [float(v) for v in outcomes["score"][rated]] == pytest.approx([7 / 9] * 6) and set(
            outcomes["correct"][rated]
        ) == {1}
        assert set(outcomes["score"][~rated]) == {""} and set(outcomes["correct"][~rated]) == {0}, "ungraded, no guess"
        world = ReplayWorld.load(tmp_path / "world")
        assert world.accuracy("think", "train") == pytest.approx(7 / 9)
        with pytest.raises(AgentBalanceError, match="none of the answers of backbone 'mid'"):
            world.accuracy("mid", "train")

        env = {"AGENTBALANCE_API_KEY": KEY}
        again = agentbalance(*command, "--judge", "tiny", "--out", "again", cwd=tmp_path, env=env)
        assert again.returncode == 0, again.stderr
        assert "judge: 9 calls (9 from the cache)" in again.stdout and len(server.requests) == 18  # nothing asked again


def test_a_judge_needs_real_answers_and_a_backbone_it_knows(tmp_path: Path) -> None:
    from tests.conftest import agentbalance

    for extra, message in [
        (["--world", "sim", "--judge", "qwen3-8b"], "--judge grades real answers, and the simulated world"),
        (["--world", "live", "--base-url", "http://127.0.0.1:9", "--judge", "nobody"], "nobody"),
    ]:
        command = ["record", "--task", "synthetic-general", "--limit", "2", "--out", "w", *extra]
        refused = agentbalance(*command, cwd=tmp_path, env={"AGENTBALANCE_API_KEY": KEY})
        assert refused.returncode == 2 and refused.stderr.startswith("error: ") and message in refused.stderr
        assert not (tmp_path / "w").exists()


def rated_by_backbone(body: dict[str, Any]) -> str:
    """A loopback responder: the judge rates qwen3-8b's answers 9 and every other backbone's 4; agents answer as the
    default responder does (their text names their backbone)."""
    from tests.loopback_server import default_responder

    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if "impartial judge" not in system:
        return default_responder(body)
    return "Rating: [[9]]" if "qwen3-8b works" in body["messages"][-1]["content"] else "Rating: [[4]]"


@pytest.mark.slow  # builds and sweeps
def test_build_evaluate_and_curve_on_questions_without_gold_grade_with_a_judge(tmp_path: Path) -> None:
    """Live questions without gold answers: `build` and `curve` refuse them without a judge (nothing to train or
    measure by) and work with `--judge`, reporting its cost apart; `evaluate` grades with the run's own judge."""
    from tests.conftest import agentbalance, write_math_questions

    lines = [json.loads(line) for line in write_math_questions(tmp_path / "q.jsonl", 16).read_text().splitlines()]
    (tmp_path / "open.jsonl").write_text("".join(json.dumps({**q, "answer": None}) + "\n" for q in lines))
    small = ["--train", "8", "--val", "4", "--test", "4"]
    with LoopbackServer(api_keys={KEY}, responder=rated_by_backbone) as server:
        env = {"AGENTBALANCE_API_KEY": KEY, "AGENTBALANCE_BASE_URL": server.base_url}
        task = ["--world", "live", "--task", "jsonl", "--data", "open.jsonl", "--cache-dir", "cache", *small]
        build = ["build", "--budget-tok", "1", *task, "--max-pool", "1", "--epochs", "1", "--restarts", "1"]
        refused = agentbalance(*build, "--out", "refused", cwd=tmp_path, env=env)
        assert refused.returncode == 2 and "none of the 8 training questions can be graded" in refused.stderr

        built = agentbalance(*build, "--judge", "qwen3-8b", "--out", "run", cwd=tmp_path, env=env)
        assert built.returncode == 0, built.stderr
        assert "judge: " in built.stdout and "(apart from the Tok of the MAS)" in built.stdout
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
        config = json.loads((tmp_path / "run" / "config.json").read_text())
        assert metrics["judge"]["calls"] > 0 and config["judge"]["backbone"] == "qwen3-8b"
        assert (
            metrics["val"]["n_graded"] == metrics["val"]["n"] > 0 and 1 / 3 <= metrics["val"]["perf"] <= 8 / 9
        )  # ratings 4 and 9 of 10

        evaluated = agentbalance("evaluate", "--model", "run", "--json", cwd=tmp_path, env=env)
        assert evaluated.returncode == 0, evaluated.stderr
        result = json.loads(evaluated.stdout)
        assert (
            result["n_graded"] == result["n"] > 0 and 1 / 3 <= result["perf"] <= 8 / 9 and "judge: " in evaluated.stderr
        )

        curve = ["curve", "--methods", "single", *task[:6], *small, "--out", "curve"]  # its cache: the environment's
        env["AGENTBALANCE_CACHE_DIR"] = str(tmp_path / "cache")
        refused = agentbalance(*curve, cwd=tmp_path, env=env)
        assert refused.returncode == 2 and "none of the 8 training questions can be graded" in refused.stderr
        drawn = agentbalance(*curve, "--judge", "qwen3-8b", cwd=tmp_path, env=env)
        assert drawn.returncode == 0, drawn.stderr
        assert "judge: USD" in drawn.stdout and "apart from every Tok" in drawn.stdout
        rows = (tmp_path / "curve" / "curve.csv").read_text().splitlines()
        perf = {row.split(",")[1]: float(row.split(",")[2]) for row in rows[1:] if row.startswith("single,")}
        expected = {name: 8 / 9 if name.startswith("qwen3-8b") else 1 / 3 for name in perf}  # -think: the same model
        assert len(perf) > 2 and perf == pytest.approx(expected)


def test_run_grades_with_a_judge_of_another_catalog_and_a_users_rubric(tmp_path: Path) -> None:
    """`run --judge NAME --judge-catalog FILE --judge-rubric FILE`: the judge is a backbone of its own catalog, told
    the user's rubric, and its rating on the rubric's scale is the answer's score."""
    from tests.conftest import agentbalance

    write_catalog(tmp_path)
    (tmp_path / "judges.yaml").write_text(
        yaml.safe_dump({"backbones": [{"name": "grader", "model": "grader-model", "family": "test", "reasoning": False,
                                        "params_active_b": 8, "price_in": 2.0, "price_out": 8.0}]})
    )  # fmt: skip
    (tmp_path / "kindness.yaml").write_text(
        "system: 'Rate how kind the answer is, 0 to 4, as Rating: [[N]].'\nprompt: '{question}\\n---\\n{answer}'\n"
        "scale: [0, 4]\n",
        encoding="utf-8",
    )
    mas = {"agents": [{"id": "a", "role": "Mathematician", "backbone": "mid"}], "edges": [], "decision": "a"}
    (tmp_path / "mas.json").write_text(json.dumps(mas))

    def kind(body: dict[str, Any]) -> str:
        return "Rating: [[3]]" if body["model"] == "grader-model" else "Be gentle with it."

    with LoopbackServer(api_keys={KEY}, responder=kind) as server:
        command = ["run", "--mas", "mas.json", "--world", "live", "--base-url", server.base_url, "--catalog"]
        command += ["catalog.yaml", "--roles", "math", "--cache-dir", "cache", "How should I talk to my plant?"]
        env = {"AGENTBALANCE_API_KEY": KEY}
        judge = ["--judge", "grader", "--judge-catalog", "judges.yaml", "--judge-rubric", "kindness.yaml"]
        done = agentbalance(*command, *judge, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        said = " ".join(done.stdout.split())
        assert "score 0.75" in said and "judge: 1 calls (0 from the cache)" in said
        (graded,) = server.requests_for("grader-model")
        assert graded.body["messages"][0]["content"].startswith("Rate how kind")  # type: ignore[index]
        assert "Be gentle with it." in graded.body["messages"][1]["content"]  # type: ignore[index]

        lone = agentbalance(*command, "--judge-rubric", "kindness.yaml", cwd=tmp_path, env=env)
        assert lone.returncode == 2 and "name it with --judge NAME" in lone.stderr
