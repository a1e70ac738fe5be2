"""Every path that executes a MAS (the async Runner, the training rollout, and each framework adapter: AutoGen
GraphFlows, Agent Framework workflows, LangGraph StateGraphs) drives the one `Execution`, so on the same world they
give the same traces: usage, cost, schedule, skips, answer, grading. An adapter whose extra is missing is skipped."""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import Caps, Execution, Skip
from agentbalance.runtime.rollout import rollout_execution
from agentbalance.runtime.runner import Runner
from agentbalance.runtime.trace import Trace
from agentbalance.splits import synthetic_split
from agentbalance.worlds import open_world
from agentbalance.worlds.base import AgentCall, Completion, World
from agentbalance.worlds.live import LiveWorld
from agentbalance.worlds.replay import ReplayWorld
from tests.fakes import trace_record
from tests.loopback_server import LoopbackServer

ROLES = RoleSet.load("general")
# adapter -> (the framework module its extra brings, the extra, the adapter's runner)
ADAPTERS = {
    "autogen": ("autogen_agentchat", "autogen", "agentbalance.adapters.autogen.GraphFlowRunner"),
    "agent-framework": ("agent_framework", "agent-framework", "agentbalance.adapters.agent_framework.WorkflowRunner"),
    "langgraph": ("langgraph.graph", "langgraph", "agentbalance.adapters.langgraph.StateGraphRunner"),
}


class CountingWorld:
    """A world that answers as `inner` does and remembers which agents called it."""

    def __init__(self, inner: World) -> None:
        self.inner = inner
        self.name, self.simulated, self.catalog = inner.name, inner.simulated, inner.catalog
        self.called: list[str] = []

    async def complete(self, call: AgentCall) -> Completion:
        self.called.append(call.agent.id)
        return await self.inner.complete(call)


def solvers_and_decision() -> MAS:
    """Two solvers (the second also reads the first) and the decision agent reading both."""
    agents = [
        Agent(id="s0", role="Knowledgeable Expert", backbone="qwen3-8b"),
        Agent(id="s1", role="Scientist", backbone="qwen3-30b-a3b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b"),
    ]
    return MAS(agents, [("s0", "s1"), ("s0", "d"), ("s1", "d")], "d")


def chain() -> MAS:
    """c0 -> c1 -> c2: a historian, an inspector reviewing it, the decision agent."""
    cast = [("Historian", "qwen3-8b"), ("Inspector", "qwen3-30b-a3b"), ("Decision Maker", "qwen3-8b")]
    agents = [Agent(id=f"c{i}", role=role, backbone=backbone) for i, (role, backbone) in enumerate(cast)]
    return MAS(agents, [("c0", "c1"), ("c1", "c2")], "c2")


record = trace_record  # the world's texts included, on every path


@pytest.fixture(params=list(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> str:
    """Each framework adapter in turn, skipped with the reason when its extra is not installed."""
    framework, extra, _ = ADAPTERS[request.param]
    pytest.importorskip(framework, reason=f'{request.param} is an optional extra: pip install "agentbalance[{extra}]"')
    return str(request.param)


def through(adapter: str, world: World, pairs: list[tuple[MAS, Query]], caps: Caps | None = None) -> list[Trace]:
    """The pairs run through one framework adapter, every call answered by `world`."""
    module, _, name = ADAPTERS[adapter][2].rpartition(".")
    runner = getattr(importlib.import_module(module), name)(ROLES, world=world, caps=caps)
    return [run.trace for run in asyncio.run(runner.run_many(pairs))]


@pytest.fixture(scope="module")
def queries() -> list[Query]:
    return synthetic_split("test", 10, seed=0)


def test_runner_rollout_and_adapter_give_the_same_traces(queries: list[Query], adapter: str) -> None:
    world = open_world("sim")
    mas = solvers_and_decision()
    pairs = [(mas, query) for query in queries]
    by_runner = Runner(world, ROLES).run_sync(pairs)
    by_rollout = [rollout_execution(world, ROLES, mas, query).trace(world.name, 0.0) for query in queries]  # type: ignore[arg-type]
    by_adapter = through(adapter, world, pairs)
    assert {t.correct for t in by_runner} == {True, False}  # the queries tell right from wrong
    for runner, rollout, adapted in zip(by_runner, by_rollout, by_adapter, strict=True):
        assert record(rollout) == record(runner)
        assert record(adapted) == record(runner)


@pytest.mark.parametrize("cap", ["max_usd after the first", "max_usd after the second", "max_seconds"])
def test_a_per_query_cap_skips_the_same_agents_on_the_runner_and_the_adapter(
    queries: list[Query], cap: str, adapter: str
) -> None:
    world, mas = open_world("sim"), chain()
    pairs = [(mas, query) for query in queries[:4]]
    for (_, query), free in zip(pairs, Runner(world, ROLES).run_sync(pairs), strict=True):
        first, second, _ = free.agents
        caps = {
            "max_usd after the first": Caps(max_usd=first.cost_usd / 2),
            "max_usd after the second": Caps(max_usd=first.cost_usd + second.cost_usd / 2),
            "max_seconds": Caps(max_seconds=first.latency_s + second.latency_s / 2),
        }[cap]
        runner_world, adapter_world = CountingWorld(world), CountingWorld(world)
        (by_runner,) = Runner(runner_world, ROLES, caps=caps).run_sync([(mas, query)])  # type: ignore[arg-type]
        (by_adapter,) = through(adapter, adapter_world, [(mas, query)], caps)  # type: ignore[arg-type]
        assert record(by_adapter) == record(by_runner)
        skipped = [a.id for a in by_runner.agents if a.skipped]
        assert skipped == (["c1", "c2"] if cap == "max_usd after the first" else ["c2"])
        assert by_runner.capped is not None and by_runner.answer is None and by_runner.correct is False
        assert adapter_world.called == runner_world.called == [a.id for a in mas.agents if a.id not in skipped]


def test_a_skip_with_an_output_reaches_the_successors_on_both_paths(
    queries: list[Query], monkeypatch: pytest.MonkeyPatch, adapter: str
) -> None:
    """A skip may carry the completion its successors receive: the adapter delivers it as the runner does."""
    passed = Completion("the inputs agree: B", "B", prompt_tokens=0, completion_tokens=0, cost_usd=0.0, latency_s=0.0)
    decide = Execution.decide

    def agreeing(execution: Execution, agent_id: str) -> Skip | None:
        return Skip("inputs agree", passed) if agent_id == "c1" else decide(execution, agent_id)

    monkeypatch.setattr(Execution, "decide", agreeing)
    world, mas = open_world("sim"), chain()
    runner_world, adapter_world = CountingWorld(world), CountingWorld(world)
    pairs = [(mas, query) for query in queries[:3]]
    by_runner = Runner(runner_world, ROLES).run_sync(pairs)  # type: ignore[arg-type]
    by_adapter = through(adapter, adapter_world, pairs)  # type: ignore[arg-type]
    for runner, adapted in zip(by_runner, by_adapter, strict=True):
        assert record(adapted) == record(runner)
        c1 = runner.agents[1]
        assert (c1.skipped, c1.answer, c1.cost_usd, c1.prompt_tokens) == ("inputs agree", "B", 0.0, 0)
    assert sorted(adapter_world.called) == sorted(runner_world.called) == ["c0"] * 3 + ["c2"] * 3  # never c1


def test_a_cascade_skips_and_escalates_alike_on_every_path(queries: list[Query], adapter: str) -> None:
    """Two cheap answerers and a conditional decision agent on a strong backbone: the runner, the rollout and the
    adapter skip it on the same queries (inputs agreed), run it afresh on the others, and cost the same."""
    world = open_world("sim")
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="qwen3-1.7b"),
        Agent(id="b", role="Scientist", backbone="qwen3-8b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b", when="disagree"),
    ]
    mas = MAS(agents, [("a", "d"), ("b", "d")], "d")
    more = queries + synthetic_split("test", 30, seed=1)
    pairs = [(mas, query) for query in more]
    runner_world, adapter_world = CountingWorld(world), CountingWorld(world)
    by_runner = Runner(runner_world, ROLES).run_sync(pairs)  # type: ignore[arg-type]
    by_rollout = [rollout_execution(world, ROLES, mas, query).trace(world.name, 0.0) for query in more]  # type: ignore[arg-type]
    by_adapter = through(adapter, adapter_world, pairs)  # type: ignore[arg-type]
    for runner, rollout, adapted in zip(by_runner, by_rollout, by_adapter, strict=True):
        assert record(rollout) == record(runner)
        assert record(adapted) == record(runner)
    escalated = [t.escalated for t in by_runner]
    assert any(escalated) and not all(escalated)
    for trace in by_runner:
        decision = trace.agents[2]
        assert (decision.skipped == "inputs agreed") is (not trace.escalated)
        if not trace.escalated:
            assert decision.cost_usd == 0 and decision.answer == trace.agents[0].answer == trace.answer
    assert sorted(adapter_world.called) == sorted(runner_world.called)
    assert runner_world.called.count("d") == sum(escalated)


def test_agents_sharing_a_backbone_read_the_same_samples_on_every_path(tmp_path: Path, adapter: str) -> None:
    """A multi-sample replay world whose sample s answers letter s: the paths agree only if each agent reads
    the same sample on all three."""
    questions = [{"id": f"q{i}", "question": f"Q{i}?", "choices": list("wxyz"), "answer": "A"} for i in range(5)]
    rows = [(q["id"], m, s, "ABC"[s], int(s == 0), 10 + s) for q in questions for m in ("one", "two") for s in range(3)]
    outcomes = pd.DataFrame(rows, columns=["id", "model", "sample", "answer", "correct", "completion_tokens"])
    outcomes.assign(cost_usd=None).to_csv(tmp_path / "outcomes.csv.gz", index=False, compression="gzip")
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    backbone = {"family": "t", "reasoning": False, "params_active_b": 8, "price_in": 0.1, "price_out": 0.2}
    models = {"backbones": [{"name": name, **backbone} for name in ("one", "two")]}
    (tmp_path / "models.yaml").write_text(json.dumps(models), encoding="utf-8")  # JSON is YAML
    world = ReplayWorld.load(tmp_path)
    agents = [Agent(id=i, role="Knowledgeable Expert", backbone="one") for i in ("s0", "s1", "s2")]
    mas = MAS([*agents, Agent(id="d", role="Decision Maker", backbone="two")], [(a.id, "d") for a in agents], "d")
    pairs = [(mas, query) for query in world.questions]
    by_runner = Runner(world, ROLES).run_sync(pairs)
    by_rollout = [rollout_execution(world, ROLES, mas, query).trace(world.name, 0.0) for query in world.questions]
    by_adapter = through(adapter, world, pairs)
    assert [a.answer for a in by_runner[0].agents] == ["A", "B", "C", "A"]
    for runner, rollout, adapted in zip(by_runner, by_rollout, by_adapter, strict=True):
        assert record(rollout) == record(runner)
        assert record(adapted) == record(runner)


def test_live_calls_to_a_loopback_server_give_the_same_traces_on_the_runner_and_the_adapter(
    tmp_path: Path, adapter: str
) -> None:
    """The live world over a real HTTP server on 127.0.0.1: the runner's first run fills the response cache (real
    calls, measured latencies), then the runner and the adapter both replay it, call for call; their traces are
    equal, a conditional decision agent's escalations included."""
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="qwen3-8b"),
        Agent(id="b", role="Scientist", backbone="qwen3-30b-a3b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b", when="disagree"),
    ]
    mas = MAS(agents, [("a", "d"), ("b", "d")], "d")
    questions = [Query(id=f"q{i}", question=f"What is {i} + {i}?", answer=str(2 * i)) for i in range(3)]
    questions.append(Query(id="mc", question="Which is largest?", choices=["1", "3", "2", "0"], answer="B"))

    def answer(body: dict[str, Any]) -> str:  # the two solvers disagree on arithmetic, agree on the choice
        if "(A)" in str(body["messages"][-1]["content"]):
            return "Answer: B"
        return "\\boxed{4}" if body["model"] == "qwen3-8b" else "\\boxed{5}"

    with LoopbackServer(api_keys={"sk-loopback"}, responder=answer) as server:
        world = LiveWorld(Catalog.load(), base_url=server.base_url, api_key="sk-loopback", cache_dir=tmp_path)
        pairs = [(mas, query) for query in questions]
        Runner(world, ROLES).run_sync(pairs)  # pays for every call once
        paid = len(server.requests)
        by_runner = Runner(world, ROLES).run_sync(pairs)
        by_adapter = through(adapter, world, pairs)
        assert len(server.requests) == paid  # both replayed the cache: the same calls, asked the same way
    assert [t.escalated for t in by_runner] == [True, True, True, False]
    for runner, adapted in zip(by_runner, by_adapter, strict=True):
        assert record(adapted) == record(runner)
