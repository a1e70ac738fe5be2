"""The Microsoft Agent Framework adapter: a MAS as a workflow (shape, fan-in), calls through the framework's chat
clients (the execution's prompts, the catalog's arguments, usage priced, failures recorded), a trained controller
as one agent (alone, streamed, inside a workflow), and the install hint without the framework."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

pytest.importorskip(
    "agent_framework", reason='Agent Framework is an optional extra: pip install "agentbalance[agent-framework]"'
)

from agent_framework import BaseChatClient, ChatResponse, Message, WorkflowBuilder

from agentbalance.adapters.agent_framework import AgentBalanceAgent, Said, WorkflowRunner, build_workflow
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query, as_query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AgentResult, Execution
from agentbalance.runtime.runner import Runner
from agentbalance.worlds.base import Completion
from agentbalance.worlds.simulated import SimulatedWorld
from tests.fakes import untrained_controller

CATALOG = Catalog.load()
ROLES = RoleSet.load("general")
BACKBONES = ("qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b")


class SayingChat(BaseChatClient):  # type: ignore[type-arg]
    """An Agent Framework chat client that says one text with fixed usage, and records what it was asked."""

    def __init__(self, text: str, fail: bool = False) -> None:
        super().__init__()
        self.text = text
        self.fail = fail
        self.received: list[tuple[list[Message], dict[str, Any]]] = []

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        self.received.append((list(messages), dict(options)))
        if self.fail:
            raise ConnectionError("the endpoint is down")
        usage = {"input_token_count": 100, "output_token_count": 20}
        return ChatResponse(messages=[Message(role="assistant", contents=[self.text])], usage_details=usage)  # type: ignore[arg-type]


def fork() -> MAS:
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="qwen3-8b"),
        Agent(id="b", role="Scientist", backbone="qwen3-30b-a3b"),
        Agent(id="c", role="Historian", backbone="qwen3-8b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b"),
    ]
    return MAS(agents, [("a", "b"), ("a", "d"), ("b", "d"), ("c", "d")], "d")


def test_the_workflow_has_a_start_an_executor_per_agent_and_the_mas_edges_with_fan_in() -> None:
    async def turn(agent_id: str) -> Any:
        raise AssertionError("not run")

    built = build_workflow(fork(), ROLES, turn)
    executors = {e.id for e in built.workflow.get_executors_list()}
    assert executors == {"task", *built.names.values()}
    groups = {
        (type(group).__name__, tuple(group.source_executor_ids), tuple(group.target_executor_ids))
        for group in built.workflow.edge_groups
    }
    names = built.names
    assert ("FanOutEdgeGroup", ("task",), (names["a"], names["c"])) in groups
    assert ("SingleEdgeGroup", (names["a"],), (names["b"],)) in groups
    assert ("FanInEdgeGroup", (names["a"], names["b"], names["c"]), (names["d"],)) in groups
    assert [e.id for e in built.workflow.get_output_executors()] == [names["d"]]


def test_calls_go_through_each_agents_chat_client_with_the_executions_prompt_and_arguments() -> None:
    clients = {b: SayingChat(f"{b} says: Answer: B") for b in BACKBONES}
    runner = WorkflowRunner(ROLES, clients=clients, catalog=CATALOG, grader=lambda q, answer: answer == q.answer)
    query = Query(id="q", question="Which?", choices=["w", "x", "y", "z"], answer="B")
    run = asyncio.run(runner.run(fork(), query))
    assert run.trace.answer == "B" and run.trace.correct is True and run.trace.world == "agent-framework"
    ((messages, options),) = clients["qwen3-235b-a22b"].received
    execution = Execution(fork(), query, ROLES, CATALOG)
    for agent_id, backbone in (("a", "qwen3-8b"), ("b", "qwen3-30b-a3b"), ("c", "qwen3-8b")):
        execution.finish(agent_id, AgentResult(Completion(f"{backbone} says: Answer: B", "B", 0, 0, 0.0, 0.0)))
    asked = [(m["role"], m["content"]) for m in execution.call("d").messages]
    assert [(str(m.role), m.text) for m in messages] == asked
    backbone = CATALOG["qwen3-235b-a22b"]
    assert options["temperature"] == 0.0 and options["extra_body"]["max_tokens"] == backbone.completion_limit()
    decision = run.trace.agents[-1]
    assert (decision.prompt_tokens, decision.completion_tokens) == (100, 20)
    assert decision.cost_usd == pytest.approx(backbone.call_cost_usd(100, 20))
    assert run.trace.cost_usd == pytest.approx(sum(a.cost_usd for a in run.trace.agents))
    assert run.result.get_outputs() == [Said("Decision_Maker", "d", "qwen3-235b-a22b says: Answer: B")]


def test_a_failing_chat_client_is_recorded_and_the_workflow_carries_on() -> None:
    clients = {"qwen3-8b": SayingChat("Answer: B"), "qwen3-30b-a3b": SayingChat("x", fail=True)}
    clients["qwen3-235b-a22b"] = SayingChat("Answer: C")
    run = asyncio.run(WorkflowRunner(ROLES, clients=clients, catalog=CATALOG).run(fork(), "Which?"))
    failed = {a.id: a.error for a in run.trace.agents if a.error}
    assert failed == {"b": "ConnectionError: the endpoint is down"} and run.trace.failures == 1
    assert run.trace.answer == "C"
    decision_prompt = clients["qwen3-235b-a22b"].received[0][0][1].text
    assert "[a | Knowledgeable Expert]" in decision_prompt and "[b | Scientist]" not in decision_prompt


def test_clients_and_roles_are_checked_before_anything_runs() -> None:
    with pytest.raises(AgentBalanceError, match="exactly one of clients"):
        WorkflowRunner(ROLES)
    runner = WorkflowRunner(ROLES, clients={"qwen3-8b": SayingChat("x")}, catalog=CATALOG)
    with pytest.raises(AgentBalanceError, match="no model client for backbone 'qwen3-30b-a3b'"):
        asyncio.run(runner.run(fork(), "Which?"))
    not_a_client = WorkflowRunner(ROLES, clients=lambda slot: "a string", catalog=CATALOG)
    with pytest.raises(AgentBalanceError, match="not an Agent Framework chat client"):
        asyncio.run(not_a_client.run(fork(), "Which?"))
    with pytest.raises(AgentBalanceError, match="role"):
        asyncio.run(runner.run(MAS([Agent(id="d", role="Poet", backbone="qwen3-8b")], [], "d"), "Which?"))


# ---- a trained controller as one agent


@pytest.fixture(scope="module")
def agent() -> AgentBalanceAgent:
    controller = untrained_controller(ROLES, BACKBONES)
    return AgentBalanceAgent(controller, world=SimulatedWorld(CATALOG, seed=0), name="balanced")


def test_the_controller_as_an_agent_answers_with_the_mas_usage_and_details(agent: AgentBalanceAgent) -> None:
    response = asyncio.run(agent.run("What is 17 * 23?"))
    details = response.additional_properties["agentbalance"]
    mas = MAS.from_json(details["mas"])
    assert details["mas"] == agent.controller.construct(as_query("What is 17 * 23?")).to_json()
    (by_runner,) = Runner(SimulatedWorld(CATALOG, seed=0), ROLES).run_sync([(mas, as_query("What is 17 * 23?"))])
    assert details["cost_usd"] == pytest.approx(by_runner.cost_usd) and details["answer"] == by_runner.answer
    assert response.text == by_runner.text
    usage = response.usage_details
    assert usage["input_token_count"] == sum(a.prompt_tokens for a in by_runner.agents)
    assert usage["output_token_count"] == sum(a.completion_tokens for a in by_runner.agents)
    assert response.messages[0].author_name == "balanced"


def test_the_agent_streams_one_update_whose_final_response_is_the_plain_one(agent: AgentBalanceAgent) -> None:
    async def streamed() -> tuple[list[str], Any]:
        stream = agent.run([Message(role="user", contents=["What is 17 * 23?"])], stream=True)
        texts = [update.text async for update in stream]
        return texts, await stream.get_final_response()

    texts, final = asyncio.run(streamed())
    plain = asyncio.run(agent.run("What is 17 * 23?"))
    assert texts == [plain.text] and final.text == plain.text
    streamed_details, plain_details = (r.additional_properties["agentbalance"] for r in (final, plain))
    assert streamed_details["mas"] == plain_details["mas"] and streamed_details["cost_usd"] == plain_details["cost_usd"]


def test_the_agent_is_a_node_of_a_users_workflow(agent: AgentBalanceAgent) -> None:
    """Agent Framework wraps it like any agent: the workflow's output is its answer."""
    workflow = WorkflowBuilder(start_executor=agent).build()
    result = asyncio.run(workflow.run("What is 17 * 23?"))
    outputs = [str(getattr(output, "text", output)) for output in result.get_outputs()]
    assert asyncio.run(agent.run("What is 17 * 23?")).text in outputs


def test_the_agent_speaks_in_a_group_chat_and_a_sequential_orchestration(agent: AgentBalanceAgent) -> None:
    """A participant of the framework's orchestrations like any agent: its turn is its MAS's answer."""
    orchestrations = pytest.importorskip("agent_framework_orchestrations", reason="agent-framework-orchestrations")
    alone = asyncio.run(agent.run("What is 17 * 23?")).text

    def said_once(messages: list[Message]) -> bool:
        return any(m.author_name == "balanced" for m in messages)

    chat = orchestrations.GroupChatBuilder(
        participants=[agent],
        selection_func=lambda state: "balanced",
        termination_condition=said_once,
        output_from="all",  # the participants' turns too, not only the closing message
    ).build()
    outputs = asyncio.run(chat.run("What is 17 * 23?")).get_outputs()
    assert [m.text for o in outputs for m in o.messages if m.author_name == "balanced"] == [alone]
    chain = orchestrations.SequentialBuilder(participants=[agent]).build()
    assert [o.text for o in asyncio.run(chain.run("What is 17 * 23?")).get_outputs()] == [alone]


def test_the_agent_refuses_no_question_and_foreign_input(agent: AgentBalanceAgent) -> None:
    with pytest.raises(AgentBalanceError, match="needs a question"):
        asyncio.run(agent.run(None))
    with pytest.raises(AgentBalanceError, match="takes texts and Messages, got a int"):
        asyncio.run(agent.run([42]))


# ---- without the framework


def test_without_agent_framework_the_adapter_raises_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "agent_framework"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "agent_framework", None)
    for name in [m for m in sys.modules if m.startswith("agentbalance.adapters.agent_framework")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(AgentBalanceError, match=r'pip install "agentbalance\[agent-framework\]"'):
        importlib.import_module("agentbalance.adapters.agent_framework")
