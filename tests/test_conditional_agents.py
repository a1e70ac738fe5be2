"""Conditional agents (`"when": "disagree"` / `"never"`): the MAS form, and the one execution rule every path
follows — skipped when the inputs agree (free, no time, the agreed answer passed on), asked afresh when they
disagree, a reliability-weighted vote when a cap or a failure stops them."""

from __future__ import annotations

import pytest

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AGREED, VOTED
from agentbalance.runtime.runner import Caps, Runner
from agentbalance.runtime.trace import Trace
from agentbalance.tasks.formats import EXACT, MATH, MCQ, NUMBER, PROGRAM
from tests.fakes import ScriptedWorld, cascade_mas

ROLES = RoleSet.load("math")
CATALOG = Catalog.load()
QUERY = Query(id="q1", question="What is 2 + 2?", answer="4", domain="math")


def cascade(when: str = "disagree") -> MAS:
    """Two cheap answerers; the decision agent on a strong backbone runs only when they disagree."""
    roles = ("Mathematician", "Algebra Specialist", "Decision Maker")
    return cascade_mas(roles, ("qwen3-1.7b", "qwen3-8b", "qwen3-235b-a22b"), when)  # type: ignore[arg-type]


def run(
    mas: MAS, answers: dict[str, str | None], caps: Caps | None = None, **world: object
) -> tuple[Trace, ScriptedWorld]:
    latency = {"qwen3-1.7b": 1.0, "qwen3-8b": 2.0, "qwen3-235b-a22b": 10.0}
    scripted = ScriptedWorld(CATALOG, latency_s=latency, answers=answers, **world)  # type: ignore[arg-type]
    (trace,) = Runner(scripted, ROLES, caps=caps).run_sync([(mas, QUERY)])
    return trace, scripted


# ---------------------------------------------------------------------------------------------- the MAS form


def test_when_is_omitted_in_json_when_always_and_read_back_otherwise() -> None:
    plain = MAS.from_json({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "decision": "d"})
    assert "when" not in plain.to_json()["agents"][0]  # old files read and write back unchanged
    document = cascade().to_json()
    assert document["agents"][2]["when"] == "disagree" and "when" not in document["agents"][0]
    assert MAS.from_json(document) == cascade()


def test_a_conditional_agent_needs_two_inputs() -> None:
    agents = [
        Agent(id="a", role="Mathematician", backbone="qwen3-8b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-8b", when="disagree"),
    ]
    with pytest.raises(AgentBalanceError, match=r"'d' has when='disagree'.*at least two inputs, found 1"):
        MAS(agents, [("a", "d")], "d", source="cascade.json")


def test_an_unknown_condition_is_a_clear_error() -> None:
    document = cascade().to_json()
    document["agents"][2]["when"] = "sometimes"
    with pytest.raises(AgentBalanceError, match="when"):
        MAS.from_json(document, source="cascade.json")


def test_mermaid_dashes_the_edges_into_a_conditional_agent() -> None:
    chart = cascade().to_mermaid()
    assert chart.count("-.->") == 2 and " --> " not in chart
    assert "(if inputs disagree)" in chart


# ---------------------------------------------------------------------------------------------- execution


def test_agreeing_inputs_skip_the_agent_which_costs_nothing_and_passes_on_their_answer() -> None:
    trace, scripted = run(cascade(), {"a": "4", "b": "4"})
    decision = trace.agents[2]
    assert decision.skipped == AGREED and decision.answer == "4"
    assert (decision.cost_usd, decision.prompt_tokens, decision.completion_tokens, decision.latency_s) == (0, 0, 0, 0)
    assert [c.agent.id for c in scripted.calls] == ["a", "b"]
    assert trace.answer == "4" and trace.correct is None and not trace.escalated
    assert trace.cost_usd == pytest.approx(0.02) and trace.latency_s == 2.0  # the slower input, nothing after it


def test_disagreeing_inputs_run_the_agent_afresh_told_that_they_disagreed() -> None:
    trace, scripted = run(cascade(), {"a": "4", "b": "5", "d": "4"})
    call = next(c for c in scripted.calls if c.agent.id == "d")
    assert call.inputs == ()  # asked afresh: its answer is its own
    assert "disagreed" in call.messages[1]["content"] and "4; 5" in call.messages[1]["content"]
    decision = trace.agents[2]
    assert decision.skipped is None and decision.escalated and trace.escalated
    assert trace.cost_usd == pytest.approx(0.03) and trace.latency_s == 12.0


@pytest.mark.parametrize("upstream", ["fails", "gives no answer"])
def test_an_input_that_fails_or_gives_no_answer_makes_the_agent_run(upstream: str) -> None:
    failing = {"fail_agents": {"b"}} if upstream == "fails" else {}
    answers = {"a": "4", "d": "4"} if upstream == "fails" else {"a": "4", "b": None, "d": "4"}
    trace, scripted = run(cascade(), answers, **failing)
    assert "d" in [c.agent.id for c in scripted.calls] and trace.escalated


def test_answers_are_compared_as_the_task_reads_them() -> None:
    scripted = ScriptedWorld(CATALOG, answers={"a": "0.5", "b": "\\frac{1}{2}"})
    (trace,) = Runner(scripted, ROLES, same_answer=MATH.same).run_sync([(cascade(), QUERY)])
    assert trace.agents[2].skipped == AGREED  # one number, two spellings
    (trace,) = Runner(ScriptedWorld(CATALOG, answers={"a": "0.5", "b": "\\frac{1}{2}"}), ROLES).run_sync(
        [(cascade(), QUERY)]
    )
    assert trace.escalated  # compared as text (the default), they differ


def test_a_capped_conditional_decision_agent_answers_with_its_inputs_weighted_vote() -> None:
    # qwen3-8b is the more reliable backbone in the catalog: its answer wins a one-against-one vote
    trace, scripted = run(cascade(), {"a": "4", "b": "5"}, caps=Caps(max_usd=0.015))
    decision = trace.agents[2]
    assert decision.skipped is not None and decision.skipped.startswith("max_usd")
    assert trace.answer == "5" and [c.agent.id for c in scripted.calls] == ["a", "b"]


def test_a_failed_conditional_decision_agent_answers_with_its_inputs_weighted_vote() -> None:
    trace, _ = run(cascade(), {"a": "4", "b": "5"}, fail_agents={"d"})
    decision = trace.agents[2]
    assert decision.error is not None and decision.answer == "5" and trace.answer == "5"
    assert trace.cost_usd == pytest.approx(0.021)  # the failed attempt still cost what it cost


def test_a_failed_unconditional_decision_agent_still_means_no_answer() -> None:
    trace, _ = run(cascade("always"), {"a": "4", "b": "5"}, fail_agents={"d"})
    assert trace.answer is None and trace.correct is False


def test_a_never_agent_is_a_free_majority_vote() -> None:
    agents = [Agent(id=f"s{k}", role="Mathematician", backbone="qwen3-1.7b") for k in range(3)]
    agents.append(Agent(id="v", role="Decision Maker", backbone="qwen3-1.7b", when="never"))
    mas = MAS(agents, [(f"s{k}", "v") for k in range(3)], "v")
    trace, scripted = run(mas, {"s0": "5", "s1": "4", "s2": "4"})
    assert trace.answer == "4" and trace.agents[3].skipped == VOTED and trace.agents[3].cost_usd == 0
    assert len(scripted.calls) == 3 and trace.latency_s == 1.0
    tie, _ = run(mas, {"s0": "5", "s1": "4", "s2": None})
    assert tie.answer == "5"  # equal weights: the earlier input wins the tie


def test_an_agreed_answer_carries_the_reliability_of_its_most_reliable_input() -> None:
    agents = [
        Agent(id="a", role="Mathematician", backbone="qwen3-1.7b"),
        Agent(id="b", role="Algebra Specialist", backbone="qwen3-32b"),
        Agent(id="c", role="Verifier", backbone="qwen3-8b", when="disagree"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-8b"),
    ]
    mas = MAS(agents, [("a", "c"), ("b", "c"), ("c", "d")], "d")
    _, scripted = run(mas, {"a": "4", "b": "4"})
    (upstream,) = next(c for c in scripted.calls if c.agent.id == "d").inputs
    assert upstream.agent_id == "c" and upstream.backbone.name == "qwen3-32b" and upstream.completion.answer == "4"
    assert upstream.completion.cost_usd == 0 and upstream.completion.completion_tokens == 0


# ---------------------------------------------------------------------------------------------- answer kinds


@pytest.mark.parametrize(
    ("answer_format", "first", "second", "same"),
    [
        (MCQ, "b", " B", True),
        (MCQ, "B", "C", False),
        (NUMBER, "1,800", "1800.0", True),
        (NUMBER, "18", "19", False),
        (MATH, "\\frac{1}{2}", "0.5", True),
        (MATH, "x^2", "x^3", False),
        (EXACT, "01/02/2020", " 01/02/2020. ", True),
        (EXACT, "01/02/2020", "02/01/2020", False),
        (PROGRAM, "def f(x):\n    return x+1", "def f(x):\n  return (x + 1)  # one more", True),
        (PROGRAM, "def f(x):\n    return x+1", "def f(y):\n    return y+1", False),
        (PROGRAM, "def f(x):\n    return x+1", "def f(x:\n", False),
    ],
)
def test_each_answer_kind_compares_as_the_task_reads_it(answer_format, first: str, second: str, same: bool) -> None:  # type: ignore[no-untyped-def]
    assert answer_format.same(QUERY, first, second) is same


# ---------------------------------------------------------------------------------------------- a replay world


def test_in_a_replay_world_an_escalated_agent_answers_with_its_own_recording(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentbalance.runtime.rollout import rollout_execution
    from agentbalance.worlds.replay import ReplayWorld
    from tests.test_replay_world import mcq_tables, write_world

    questions, outcomes = mcq_tables()
    world = ReplayWorld.load(write_world(tmp_path / "tiny-mcq", questions, outcomes))
    roles = RoleSet.load("general")
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="alpha"),
        Agent(id="g", role="Scientist", backbone="gamma"),
        Agent(id="d", role="Decision Maker", backbone="beta", when="disagree"),
    ]
    mas = MAS(agents, [("a", "d"), ("g", "d")], "d")
    recorded = outcomes.set_index(["id", "model"])["answer"]
    by_id = {q.id: q for q in world.queries("train") + world.queries("val") + world.queries("test")}
    agreed = by_id["q04"]  # alpha and gamma both right
    execution = rollout_execution(world, roles, mas, agreed)
    assert execution.results["d"].skipped == AGREED and execution.outcome().cost_usd == execution.spent_usd
    assert execution.outcome().answer == recorded[("q04", "alpha")] and not execution.outcome().escalated
    disagreed = by_id["q07"]  # alpha right, gamma wrong: beta, asked afresh, gives its own (wrong) recording
    outcome = rollout_execution(world, roles, mas, disagreed).outcome()
    assert outcome.escalated and outcome.answer == recorded[("q07", "beta")] and outcome.score == 0.0


# ---------------------------------------------------------------------------------------------- budgets


def test_the_upper_bound_on_realised_costs_certifies_the_mean_cost_of_a_cascade() -> None:
    """A cascade's per-query cost is two-valued (escalated or not): the one-sided 95% bound every budget check
    uses, over 200 realised costs, still covers the true mean cost about 95% of the time."""
    import numpy as np

    from agentbalance.measuring import CONFIDENCE_Z, summarise
    from agentbalance.runtime.execution import Outcome

    rng = np.random.default_rng(0)
    cheap, strong, rate, n = 0.0002, 0.005, 0.14, 200  # USD per query; escalation rate as on routerbench-arc
    true_mean = 100 * (cheap + rate * strong)  # USD per 100 queries
    mas = cascade()
    covered = 0
    repeats = 400
    for _ in range(repeats):
        escalated = rng.random(n) < rate
        outcomes = [Outcome("4", True, cheap + strong * e, 1.0, 3, bool(e)) for e in escalated]
        evaluation = summarise([mas] * n, outcomes, CONFIDENCE_Z)
        assert evaluation.escalation_rate == pytest.approx(escalated.mean())
        covered += evaluation.tok_upper >= true_mean
    assert 0.92 <= covered / repeats <= 0.98  # nominal 0.95; 400 repeats measure it to about 1 point


# ---------------------------------------------------------------------------------------------- a live world


@pytest.mark.parametrize("think_says", ["4.0", "5"])
def test_in_a_live_world_the_strong_backbone_is_asked_only_on_disagreement_and_afresh(
    tmp_path, think_says: str
) -> None:  # type: ignore[no-untyped-def]
    from tests.loopback_server import LoopbackServer
    from tests.test_live_world import live, write_catalog

    def responder(body: dict) -> str:  # type: ignore[type-arg]
        said = {"tiny-model": "4", "think-model": think_says, "mid-model": "6"}[str(body["model"])]
        return f"{body['model']} works it out. So the result is \\boxed{{{said}}}."

    catalog = write_catalog(tmp_path)
    agents = [
        Agent(id="a0", role="Mathematician", backbone="tiny"),
        Agent(id="a1", role="Algebra Specialist", backbone="think"),
        Agent(id="d", role="Decision Maker", backbone="mid", when="disagree"),
    ]
    mas = MAS(agents, [("a0", "d"), ("a1", "d")], "d")
    with LoopbackServer(responder=responder) as server:
        world = live(catalog, server, tmp_path / "cache", api_key="sk-test")
        runner = Runner(world, ROLES, grader=MATH.score, same_answer=MATH.same)
        (trace,) = runner.run_sync([(mas, QUERY)])
        asked = [request.model for request in server.requests]
    if think_says == "4.0":  # 4 and 4.0 are one answer as MATH reads them: the mid model is never called
        assert sorted(asked) == ["think-model", "tiny-model"] and trace.answer == "4" and trace.correct is True
        assert trace.agents[2].skipped == AGREED and not trace.escalated
        return
    assert sorted(asked) == ["mid-model", "think-model", "tiny-model"] and trace.escalated
    (escalation,) = [r for r in server.requests if r.model == "mid-model"]
    prompt = escalation.body["messages"][-1]["content"]  # type: ignore[index]
    assert "disagreed" in prompt and "4; 5" in prompt and "works it out" not in prompt  # afresh: no input texts
    assert trace.answer == "6" and trace.correct is False  # its own answer, not a vote
