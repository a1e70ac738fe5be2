"""The async DAG runner: scheduling on the critical path, exact accounting, failures, caps, concurrency."""

from __future__ import annotations

import asyncio

import pytest

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Caps, Runner
from tests.fakes import ScriptedWorld

ROLES = RoleSet.load("math")
QUERY = Query(id="q1", question="What is 2 + 2?", answer="4", domain="math")


def diamond() -> MAS:
    """s0 (slow) and s1 (fast) -> v -> d, plus s1 -> d."""
    agents = [
        Agent(id="s0", role="Mathematician", backbone="qwen3-32b"),
        Agent(id="s1", role="Algebra Specialist", backbone="qwen3-8b"),
        Agent(id="v", role="Verifier", backbone="qwen3-14b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-1.7b"),
    ]
    return MAS(agents, [("s0", "v"), ("s1", "v"), ("v", "d"), ("s1", "d")], "d")


def world(**kwargs: object) -> ScriptedWorld:
    latency = {"qwen3-32b": 10.0, "qwen3-8b": 2.0, "qwen3-14b": 3.0, "qwen3-1.7b": 1.0}
    return ScriptedWorld(Catalog.load(), latency_s=latency, **kwargs)  # type: ignore[arg-type]


def test_trace_accounts_exactly_and_latency_is_the_critical_path() -> None:
    runner = Runner(world(), ROLES)
    (trace,) = runner.run_sync([(diamond(), QUERY)])
    by_id = {a.id: a for a in trace.agents}
    assert (by_id["v"].start_s, by_id["v"].end_s) == (10.0, 13.0)
    assert (by_id["d"].start_s, by_id["d"].end_s) == (13.0, 14.0)
    assert trace.latency_s == 14.0
    assert trace.cost_usd == pytest.approx(0.04)
    assert trace.prompt_tokens == sum(a.prompt_tokens for a in trace.agents)
    assert trace.completion_tokens == 200
    assert trace.answer == "4" and trace.failures == 0 and trace.capped is None
    assert by_id["d"].inputs == ("v", "s1")


def test_each_agent_sees_its_role_prompt_the_query_and_its_predecessors_messages() -> None:
    scripted = world()
    Runner(scripted, ROLES).run_sync([(diamond(), QUERY)])
    call = next(c for c in scripted.calls if c.agent.id == "v")
    system, user = call.messages
    assert system == {"role": "system", "content": ROLES["Verifier"].prompt}
    assert "What is 2 + 2?" in user["content"]
    assert "[s0 | Mathematician]\ns0 saw []" in user["content"]
    assert [u.agent_id for u in call.inputs] == ["s0", "s1"]


def test_agents_start_as_soon_as_their_predecessors_finish() -> None:
    scripted = world(sleep_scale=0.01)
    Runner(scripted, ROLES).run_sync([(diamond(), QUERY)])
    start = {key.split("/")[1]: value for key, value in scripted.started.items()}
    assert abs(start["s0"] - start["s1"]) < 0.02, "independent agents run concurrently"
    assert start["v"] - start["s0"] == pytest.approx(0.10, abs=0.03), "v waits for the slow s0 only"


def test_a_failing_agent_is_recorded_and_the_rest_runs_with_what_arrived() -> None:
    scripted = world(fail_agents={"s0"}, crash_agents={"s1"})
    (trace,) = Runner(scripted, ROLES).run_sync([(diamond(), QUERY)])
    by_id = {a.id: a for a in trace.agents}
    assert by_id["s0"].error == "HTTP 500 after 3 retries" and by_id["s0"].cost_usd == 0.001
    assert by_id["s1"].error == "RuntimeError: client bug"
    assert trace.failures == 2
    verifier_call = next(c for c in scripted.calls if c.agent.id == "v")
    assert verifier_call.inputs == [], "v ran on the query alone"
    assert trace.answer == "4"
    assert trace.cost_usd == pytest.approx(0.001 + 0.01 + 0.01)


def test_a_failed_decision_agent_means_no_answer_and_incorrect() -> None:
    (trace,) = Runner(world(fail_agents={"d"}), ROLES).run_sync([(diamond(), QUERY)])
    assert trace.answer is None and trace.correct is False


def test_usd_cap_stops_new_launches_and_the_trace_says_so() -> None:
    (trace,) = Runner(world(), ROLES, caps=Caps(max_usd=0.015)).run_sync([(diamond(), QUERY)])
    by_id = {a.id: a for a in trace.agents}
    assert by_id["s0"].skipped is None and by_id["s1"].skipped is None
    assert by_id["v"].skipped == "max_usd 0.015 reached" and by_id["d"].skipped
    assert trace.capped == "max_usd 0.015 reached" and trace.answer is None
    assert trace.cost_usd == pytest.approx(0.02)


def test_seconds_cap_uses_the_modelled_clock() -> None:
    (trace,) = Runner(world(), ROLES, caps=Caps(max_seconds=12)).run_sync([(diamond(), QUERY)])
    by_id = {a.id: a for a in trace.agents}
    assert by_id["v"].skipped is None, "v starts at 10 s < 12 s"
    assert by_id["d"].skipped == "max_seconds 12 reached", "d would start at 13 s"


def test_caps_must_be_positive() -> None:
    with pytest.raises(AgentBalanceError, match="max_usd must be positive"):
        Caps(max_usd=0)


def test_many_queries_share_one_concurrency_limit_and_keep_their_order() -> None:
    scripted = world(sleep_scale=0.001)
    queries = [Query(id=f"q{i}", question=f"{i} + 1?", answer=str(i + 1)) for i in range(40)]
    traces = Runner(scripted, ROLES, concurrency=5).run_sync([(diamond(), q) for q in queries])
    assert [t.id for t in traces] == [q.id for q in queries]
    assert [t.answer for t in traces] == [q.answer for q in queries]
    assert scripted.max_in_flight == 5


def test_unknown_backbone_is_a_user_error_before_any_call() -> None:
    scripted = world()
    mas = MAS([Agent(id="d", role="Decision Maker", backbone="gpt-9")], [], "d")
    with pytest.raises(AgentBalanceError, match="unknown backbone 'gpt-9'"):
        Runner(scripted, ROLES).run_sync([(mas, QUERY)])
    assert scripted.calls == []


def test_a_grader_scores_when_the_world_does_not() -> None:
    runner = Runner(world(), ROLES, grader=lambda query, answer: answer == query.answer)
    (trace,) = asyncio.run(runner.run_many([(diamond(), QUERY)]))
    assert trace.correct is True
