"""A run's rules for its answers (`TaskRules`: who grades, when two answers are one) and a world's question for what a
caller has (`query_for`: a text, a conversation, a Query or a recorded id), each decided in one place."""

from __future__ import annotations

import pytest

from agentbalance.agreement import ReplyAgreement, TaskAgreement
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, Turn, text_query
from agentbalance.task_rules import TaskRules
from agentbalance.tasks.user_jsonl import user_task
from agentbalance.worlds import open_world
from agentbalance.worlds.base import QueryRefused, Refusal, query_for, same_recorded_answer
from agentbalance.worlds.replay import ReplayWorld
from tests.test_replay_world import mcq_tables, write_world

ADVICE = "Water the fern once a week and keep it out of direct sunlight; it likes humid air."
SAME_ADVICE = "Give the fern water weekly, and keep it away from direct sun: ferns like humidity."
OPEN_ENDED = Query(id="o", question="How should I look after a fern in my flat?", domain="general")
CHOICE = Query(id="c", question="Pick one.", choices=("red", "blue"), answer="A", domain="general")
EARLIER = (Turn(role="user", content="I have a fern."), Turn(role="assistant", content="Nice."))


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> ReplayWorld:
    return ReplayWorld.load(write_world(tmp_path_factory.mktemp("worlds") / "tiny-mcq", *mcq_tables()))


# ----------------------------------------------------------------------------- TaskRules


def test_a_task_grades_with_its_scorer_and_compares_answers_by_its_own_rule_in_any_world(replay: ReplayWorld) -> None:
    task = user_task("mine", [OPEN_ENDED, CHOICE])
    for world in (open_world("sim"), replay, None):
        rules = TaskRules.of(task, world)
        assert rules.grader == task.score
        assert isinstance(rules.same_answer, TaskAgreement) and rules.same_answer.task is task
        assert rules.same_answer(CHOICE, "a", "A") and not rules.same_answer(CHOICE, "A", "B")


def test_without_a_task_the_simulated_and_replay_worlds_grade_and_compare_canonical_answers(
    replay: ReplayWorld,
) -> None:
    for world in (open_world("sim"), replay):
        rules = TaskRules.of(None, world)
        assert rules.grader is None  # the world knows the gold and grades
        assert rules.same_answer is same_recorded_answer


def test_real_replies_without_a_task_compare_letters_exactly_and_free_text_by_meaning(encoder: TextEncoder) -> None:
    rules = TaskRules.of(None, None, encoder)  # an adapter's model clients: no task, no world
    assert rules.grader is None and isinstance(rules.same_answer, ReplyAgreement)
    assert rules.same_answer(CHOICE, "a", "A") and not rules.same_answer(CHOICE, "A", "B")
    assert rules.same_answer(OPEN_ENDED, ADVICE, SAME_ADVICE)
    exact = TaskRules.of(None, None, encoder, threshold=1.0)  # `--agreement-threshold 1`: only the same text agrees
    assert not exact.same_answer(OPEN_ENDED, ADVICE, SAME_ADVICE) and exact.same_answer(OPEN_ENDED, "Paris.", " paris")


def test_a_free_text_task_compares_its_open_ended_answers_by_meaning_at_the_threshold_given(
    encoder: TextEncoder,
) -> None:
    task = user_task("mine", [OPEN_ENDED, CHOICE])
    assert TaskRules.of(task, open_world("sim"), encoder).same_answer(OPEN_ENDED, ADVICE, SAME_ADVICE)
    assert not TaskRules.of(task, open_world("sim"), encoder, threshold=1.0).same_answer(
        OPEN_ENDED, ADVICE, SAME_ADVICE
    )


# ----------------------------------------------------------------------------- query_for


def test_a_replay_world_answers_a_recorded_id_with_its_recorded_question_in_the_conversation_given(
    replay: ReplayWorld,
) -> None:
    recorded = replay.resolve_query(Query(id="q03", question="(recorded)"))
    assert query_for(replay, query_id="q03") == recorded
    asked = query_for(replay, "the client's own words", query_id="q03", context=EARLIER)
    assert asked == recorded.model_copy(update={"context": EARLIER})  # the recording decides the question


def test_a_replay_world_looks_a_query_up_by_its_id(replay: ReplayWorld) -> None:
    named = Query(id="q05", question="(recorded question q05)", context=EARLIER)  # a query file may give only ids
    asked = query_for(replay, named)
    assert asked.id == "q05" and asked.question == "Question number 5: which option is right?"
    assert asked.choices and asked.context == EARLIER


def test_a_replay_world_refuses_a_question_text_with_the_callers_hint(replay: ReplayWorld) -> None:
    with pytest.raises(QueryRefused) as refused:
        query_for(replay, "Which option is right?", hint="give them with --input FILE.jsonl")
    assert refused.value.why is Refusal.TEXT and refused.value.text == "Which option is right?"
    assert refused.value.world == replay.name == "replay:tiny-mcq"
    assert (
        str(refused.value) == "replay:tiny-mcq replays its recorded questions only: give them with --input FILE.jsonl"
    )
    with pytest.raises(QueryRefused, match="recorded questions only") as conversation:
        query_for(replay, [{"role": "user", "content": "Which option is right?"}])
    assert conversation.value.why is Refusal.TEXT


def test_a_replay_world_refuses_an_id_it_did_not_record_saying_where_it_looked(replay: ReplayWorld) -> None:
    for asked in ({"query_id": "q99"}, {"asked": Query(id="q99", question="(recorded question q99)")}):
        with pytest.raises(QueryRefused, match=r"question id 'q99' is not recorded in .*questions\.jsonl") as refused:
            query_for(replay, **asked)  # type: ignore[arg-type]
        assert refused.value.why is Refusal.UNKNOWN_ID and refused.value.query_id == "q99"
    with pytest.raises(QueryRefused) as blank:
        query_for(replay, query_id="")  # no question can carry it
    assert blank.value.why is Refusal.UNKNOWN_ID


def test_only_a_replay_world_looks_questions_up_by_id() -> None:
    sim = open_world("sim")
    with pytest.raises(QueryRefused, match="only a replay world") as refused:
        query_for(sim, "What is 2 + 3?", query_id="q1")
    assert refused.value.why is Refusal.NO_LOOKUP and refused.value.query_id == "q1" and refused.value.world == sim.name
    assert isinstance(refused.value, AgentBalanceError)  # a user's error: the CLI reports it, never a traceback


def test_any_other_world_takes_the_question_as_given() -> None:
    sim = open_world("sim")
    mine = Query(id="mine-1", question="What is 2 + 3?", answer="5")
    assert query_for(sim, mine) is mine
    assert query_for(sim, "What is 2 + 3?") == text_query("What is 2 + 3?")  # same text, same id
    in_conversation = query_for(sim, "What is 2 + 3?", context=EARLIER)
    assert in_conversation == text_query("What is 2 + 3?").model_copy(update={"context": EARLIER})
    conversation = [{"role": "user", "content": "I have a fern."}, {"role": "user", "content": "What is 2 + 3?"}]
    assert query_for(sim, conversation).context == (Turn(role="user", content="I have a fern."),)
