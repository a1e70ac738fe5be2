"""Conditional agents over free text: two replies agree when the shipped encoder puts them close (short answers only
when they are the same text), and every path that executes a MAS on real replies compares them so: serve's
runner, `run` on a question file, the framework adapters."""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from agentbalance.agreement import FREE_TEXT_THRESHOLD, MeaningAgreement, answers_agree
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, as_query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AGREED, NO_CAPS
from agentbalance.serve import ServeOptions
from agentbalance.tasks.formats import EXACT, FREE
from agentbalance.tasks.user_jsonl import user_task
from agentbalance.worlds import open_world
from tests.conftest import agentbalance
from tests.fakes import cascade_mas
from tests.loopback_server import LoopbackServer
from tests.serving import live_world, served
from tests.test_execution_paths import ADAPTERS

QUESTION = "How should I look after a fern in my flat?"
ADVICE = "Water the fern once a week and keep it out of direct sunlight; it likes humid air."
SAME_ADVICE = "Give the fern water weekly, and keep it away from direct sun: ferns like humidity."
OTHER_MATTER = "Call your bank to dispute the charge on your card and ask for a new card."
DECIDER = "Trust the first answer: a fern wants weekly water and shade."
MAS_OF_THREE = cascade_mas(
    ("Knowledgeable Expert", "Scientist", "Decision Maker"), ("qwen3-8b", "qwen3-14b", "qwen3-32b")
)


def replies(second: str) -> Any:
    """The loopback fake's answers: the first answerer's advice, `second` from the other, the decider's own."""

    def responder(body: dict[str, Any]) -> str:
        return {"qwen3-8b": ADVICE, "qwen3-14b": second}.get(str(body["model"]), DECIDER)

    return responder


def test_free_text_agrees_by_meaning_and_short_answers_only_when_they_are_the_same_text(encoder: TextEncoder) -> None:
    same = MeaningAgreement(encoder)
    query = Query(id="q", question=QUESTION)
    assert same(query, ADVICE, SAME_ADVICE) and same.cosine(ADVICE, SAME_ADVICE) >= FREE_TEXT_THRESHOLD
    assert not same(query, ADVICE, OTHER_MATTER)
    assert same(query, "Paris.", " paris") and not same(query, "4", "5") and not same(query, "yes", "no")
    assert not MeaningAgreement(encoder, threshold=1.0)(query, ADVICE, SAME_ADVICE)  # 1.0: only the same text agrees
    with pytest.raises(AgentBalanceError, match="threshold must be in"):
        MeaningAgreement(threshold=1.5)


def test_a_question_without_a_gold_is_open_ended_asked_as_it_stands_and_read_whole(encoder: TextEncoder) -> None:
    open_ended = Query(id="o", question=QUESTION, domain="general")
    short = Query(id="s", question="What is the capital of Peru?", answer="Lima", domain="general")
    reference = Query(id="r", question=QUESTION, answer=ADVICE, domain="general")
    choice = Query(id="c", question="Pick one.", choices=("red", "blue"), answer="A", domain="general")
    task = user_task("mine", [open_ended, short, reference, choice])
    assert task.format_of(open_ended) is FREE and task.format_of(reference) is FREE  # a long gold: a reference
    assert task.format_of(short) is EXACT and task.free_text(open_ended) and not task.free_text(short)
    assert task.prompt(open_ended) == open_ended.render() and "Answer:" in task.prompt(short)
    assert task.parse(f"  {ADVICE}\n", open_ended) == ADVICE
    rule = answers_agree(task, open_world("sim"), encoder)
    assert rule(open_ended, ADVICE, SAME_ADVICE) and not rule(short, ADVICE, SAME_ADVICE)  # EXACT: same text only
    assert rule(choice, "a", "A") and not rule(choice, "A", "B")


def test_simulated_and_replay_answers_compare_as_canonical_answers_without_the_encoder() -> None:
    rule = answers_agree(None, open_world("sim"))
    query = Query(id="q", question=QUESTION)
    assert rule(query, "B", "b") and not rule(query, ADVICE, SAME_ADVICE)


CASES = [(SAME_ADVICE, None, False), (OTHER_MATTER, None, True), (SAME_ADVICE, 1.0, True)]


@pytest.mark.parametrize(("second", "threshold", "decider_asked"), CASES, ids=["same", "other", "same-text-only"])
def test_serve_skips_the_conditional_agent_only_when_the_replies_mean_the_same(
    trained_run: Path, encoder: TextEncoder, second: str, threshold: float | None, decider_asked: bool
) -> None:
    options = {} if threshold is None else {"agreement_threshold": threshold}
    with LoopbackServer(responder=replies(second)) as upstream:
        model = served(trained_run, live_world(upstream), encoder)
        runner = model.runner(NO_CAPS, 4, **options)  # what the app runs every request with
        (trace,) = runner.run_sync([(MAS_OF_THREE, as_query([{"role": "user", "content": QUESTION}]))])
        asked = sorted(request.model for request in upstream.requests)
    assert ("qwen3-32b" in asked) is decider_asked
    if decider_asked:
        assert trace.escalated and trace.text == DECIDER
    else:
        assert trace.agents[2].skipped == AGREED and trace.text in (ADVICE, SAME_ADVICE)


def test_a_threshold_outside_zero_to_one_is_refused_where_it_is_given(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match="--agreement-threshold must be in"):
        ServeOptions(agreement_threshold=-0.1)
    done = agentbalance("run", "--agreement-threshold", "2", "What is 2 + 2?", cwd=tmp_path)
    assert done.returncode == 2 and "--agreement-threshold" in done.stderr and "Traceback" not in done.stderr


def test_run_on_a_file_of_open_ended_questions_compares_the_replies_by_meaning(tmp_path: Path) -> None:
    (tmp_path / "mas.json").write_text(json.dumps(MAS_OF_THREE.to_json()), encoding="utf-8")
    lines = [{"id": "fern", "question": QUESTION}, {"id": "bank", "question": "My card was charged twice."}]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    def responder(body: dict[str, Any]) -> str:
        asked = str(body["messages"][-1]["content"])
        second = SAME_ADVICE if "fern" in asked else OTHER_MATTER
        return replies(second)(body)

    with LoopbackServer(responder=responder) as upstream:
        command = ["run", "--mas", "mas.json", "--world", "live", "--base-url", upstream.base_url, "--input"]
        env = {"AGENTBALANCE_API_KEY": "k"}
        done = agentbalance(*command, "questions.jsonl", "--json", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        decided = [r for r in upstream.requests if r.model == "qwen3-32b"]
        strict = agentbalance(*command, "questions.jsonl", "--agreement-threshold", "1", cwd=tmp_path, env=env)
        assert strict.returncode == 0, strict.stderr
        decided_strictly = [r for r in upstream.requests if r.model == "qwen3-32b"][len(decided) :]
    traces = {line["id"]: line for line in map(json.loads, done.stdout.splitlines())}
    assert len(decided) == 1 and QUESTION not in str(decided[0].body["messages"])  # only the bank question
    fern = next(agent for agent in traces["fern"]["agents"] if agent["id"] == "d")
    assert fern["skipped"] == AGREED
    # 1: only the same text agrees, so the fern's replies escalate too (the bank's decider answers from the cache)
    assert len(decided_strictly) == 1 and QUESTION in str(decided_strictly[0].body["messages"])


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_each_framework_adapter_compares_free_text_replies_by_meaning_by_default(adapter: str) -> None:
    """The agreeing replies: no adapter asks the conditional agent (`run` and serve also check the other case)."""
    framework, extra, runner_path = ADAPTERS[adapter]
    pytest.importorskip(framework, reason=f'{adapter} is an optional extra: pip install "agentbalance[{extra}]"')
    module, _, name = runner_path.rpartition(".")
    with LoopbackServer(responder=replies(SAME_ADVICE)) as upstream:
        runner = getattr(importlib.import_module(module), name)(RoleSet.load("general"), world=live_world(upstream))
        (run,) = asyncio.run(runner.run_many([(MAS_OF_THREE, QUESTION)]))
        asked = [request.model for request in upstream.requests]
    assert "qwen3-32b" not in asked and len(asked) == 2 and run.trace.agents[2].skipped == AGREED
