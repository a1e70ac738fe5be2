"""The LLM judge: reading verdicts, rubrics, and grading through a live world in front of the loopback fake
(what is sent, caching, its own accounting, failures never turned into grades)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

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
