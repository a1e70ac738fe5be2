"""The LangGraph adapter: a MAS as a StateGraph (a node per agent, waiting edges for fan-in, conditional agents behind
a gate with a conditional edge), calls through LangChain chat models (the execution's prompts, the catalog's
arguments, usage priced, failures recorded), and the install hint without LangGraph."""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import Any

import pytest

pytest.importorskip("langgraph.graph", reason='LangGraph is an optional extra: pip install "agentbalance[langgraph]"')

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from agentbalance.adapters.langgraph import StateGraphRunner, Steps, build_graph
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.roles import RoleSet
from agentbalance.worlds.simulated import SimulatedWorld
from tests.fakes import cascade_mas, fork

CATALOG = Catalog.load()
ROLES = RoleSet.load("general")


class SayingModel(BaseChatModel):
    """A LangChain chat model that says one text with fixed usage, and records what it was asked."""

    text: str
    fail: bool = False
    received: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "saying"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.received.append((list(messages), dict(kwargs)))
        if self.fail:
            raise TimeoutError("no answer in time")
        usage = {"input_tokens": 80, "output_tokens": 12, "total_tokens": 92}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.text, usage_metadata=usage))])


def never_called() -> Steps:
    async def fail(agent_id: str) -> Any:
        raise AssertionError("not run")

    return Steps(fail, fail, fail, fail)


def test_the_graph_has_a_node_per_agent_and_waits_for_every_input() -> None:
    graph = build_graph(fork(), never_called()).graph.get_graph()
    assert set(graph.nodes) == {"__start__", "Knowledgeable_Expert", "Scientist", "Decision_Maker", "__end__"}
    edges = {(e.source, e.target) for e in graph.edges}
    assert edges == {
        ("__start__", "Knowledgeable_Expert"),
        ("Knowledgeable_Expert", "Scientist"),
        ("Knowledgeable_Expert", "Decision_Maker"),
        ("Scientist", "Decision_Maker"),
        ("Decision_Maker", "__end__"),
    }


def test_a_conditional_agent_sits_behind_a_gate_whose_conditional_edge_runs_it_or_passes() -> None:
    mas = cascade_mas(
        ("Knowledgeable Expert", "Scientist", "Decision Maker"), ("qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b")
    )
    graph = build_graph(mas, never_called()).graph.get_graph()
    conditional = {(e.source, e.target) for e in graph.edges if e.conditional}
    assert conditional == {("Decision_Maker__gate", "Decision_Maker"), ("Decision_Maker__gate", "Decision_Maker__pass")}
    plain = {(e.source, e.target) for e in graph.edges if not e.conditional}
    assert {("Decision_Maker", "Decision_Maker__done"), ("Decision_Maker__pass", "Decision_Maker__done")} <= plain
    assert ("Decision_Maker__done", "__end__") in plain


def test_a_cascade_runs_its_decision_agent_only_when_the_simulated_inputs_disagree() -> None:
    from agentbalance.splits import synthetic_split

    mas = cascade_mas(
        ("Knowledgeable Expert", "Scientist", "Decision Maker"), ("qwen3-1.7b", "qwen3-8b", "qwen3-235b-a22b")
    )
    runs = asyncio.run(
        StateGraphRunner(ROLES, world=SimulatedWorld(CATALOG, seed=0)).run_many(
            [(mas, query) for query in synthetic_split("test", 12, seed=0)]
        )
    )
    for run in runs:
        decision = run.trace.agents[-1]
        ran = decision.skipped is None
        assert ran is run.trace.escalated
        assert (decision.cost_usd > 0) is ran
        assert run.result["said"]["Decision_Maker"]  # both branches say something: the call, or the agreed answer
    assert {run.trace.escalated for run in runs} == {True, False}


def test_calls_go_through_each_agents_chat_model_with_the_executions_prompt_and_arguments() -> None:
    models = {
        b: SayingModel(text=f"{b}: Answer: 7", received=[]) for b in ("qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b")
    }
    run = asyncio.run(StateGraphRunner(ROLES, clients=models, catalog=CATALOG).run(fork(), "What is 3 + 4?"))
    assert run.trace.answer == "7" and run.trace.world == "langgraph"
    ((messages, kwargs),) = models["qwen3-235b-a22b"].received
    assert [m.type for m in messages] == ["system", "human"]
    assert messages[0].content == ROLES["Decision Maker"].prompt
    assert "[a | Knowledgeable Expert]\nqwen3-8b: Answer: 7" in str(messages[1].content)
    backbone = CATALOG["qwen3-235b-a22b"]
    assert kwargs["temperature"] == 0.0 and kwargs["extra_body"]["max_tokens"] == backbone.completion_limit()
    decision = run.trace.agents[-1]
    assert (decision.prompt_tokens, decision.completion_tokens) == (80, 12)
    assert decision.cost_usd == pytest.approx(backbone.call_cost_usd(80, 12))


def test_a_failing_chat_model_is_recorded_and_the_graph_carries_on() -> None:
    models = {
        "qwen3-8b": SayingModel(text="Answer: 7", received=[]),
        "qwen3-30b-a3b": SayingModel(text="x", fail=True, received=[]),
        "qwen3-235b-a22b": SayingModel(text="Answer: 8", received=[]),
    }
    run = asyncio.run(StateGraphRunner(ROLES, clients=models, catalog=CATALOG).run(fork(), "What is 3 + 4?"))
    assert {a.id: a.error for a in run.trace.agents if a.error} == {"b": "TimeoutError: no answer in time"}
    assert run.trace.answer == "8"
    with pytest.raises(AgentBalanceError, match="not a LangChain chat model"):
        asyncio.run(StateGraphRunner(ROLES, clients=lambda slot: 42, catalog=CATALOG).run(fork(), "x"))


def test_without_langgraph_the_adapter_raises_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "langgraph"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "langgraph", None)
    for name in [m for m in sys.modules if m.startswith("agentbalance.adapters.langgraph")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(AgentBalanceError, match=r'pip install "agentbalance\[langgraph\]"'):
        importlib.import_module("agentbalance.adapters.langgraph")
