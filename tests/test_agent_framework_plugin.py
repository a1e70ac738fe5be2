"""The plug-in over a user's Agent Framework orchestration: its agents become the roles (sequential, concurrent, group
chat), the orchestration as written is the MAS its shape says, and made budget-aware each task runs the
controller's MAS as a workflow, accounted as agentbalance's runner accounts it, over a world or ordinary chat
clients, with the user's own clients never called."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

pytest.importorskip(
    "agent_framework_orchestrations",
    reason='Agent Framework is an optional extra: pip install "agentbalance[agent-framework]"',
)

from agent_framework import Agent, BaseChatClient, ChatResponse, Executor, Message, WorkflowContext, handler
from agent_framework_orchestrations import ConcurrentBuilder, GroupChatBuilder, SequentialBuilder

from agentbalance.adapters.agent_framework import (
    BudgetAwareOrchestration,
    Said,
    Shape,
    read_orchestration,
    roles_from_orchestration,
)
from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.runtime.runner import Runner
from agentbalance.splits import synthetic_split
from agentbalance.trained import TrainedController
from agentbalance.worlds.simulated import SimulatedWorld
from tests.fakes import HashEncoder, gate_off, loads_instead, untrained_controller
from tests.fakes import trace_record as record

CATALOG = Catalog.load()
BACKBONES = ("qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b")
INSTRUCTIONS = {
    "researcher": "You research the facts behind the question. End with `Answer: X`.",
    "skeptic": "You look for errors in the other agents' answers and say which answer survives.",
    "calculator": "You compute every quantity step by step. Put the final answer in \\boxed{}.",
    "final_answerer": "You read the other agents and give the one final answer.",
}


class SayingChat(BaseChatClient):  # type: ignore[type-arg]
    """A chat client that says one text with fixed usage, and records what it was asked."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.received: list[list[Message]] = []

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        self.received.append(list(messages))
        usage = {"input_token_count": 100, "output_token_count": 20}
        return ChatResponse(messages=[Message(role="assistant", contents=[self.text])], usage_details=usage)  # type: ignore[arg-type]


def user_agents(client: SayingChat | None = None) -> list[Agent]:
    """The user's four agents, all on their one model (a client the plug-in never calls)."""
    client = client or SayingChat("the user's own model")
    return [
        Agent(client, instructions, name=name, description=f"The {name.replace('_', ' ')}.")
        for name, instructions in INSTRUCTIONS.items()
    ]


def sequential(client: SayingChat | None = None) -> SequentialBuilder:
    return SequentialBuilder(participants=user_agents(client))


def tiny_controller(seed: int = 0) -> TrainedController:
    """An untrained controller over the orchestration's roles and three real backbones (cheap: a hash encoder)."""
    roles = roles_from_orchestration(sequential(), critics=["skeptic"], domains={"calculator": ["math"]})
    return untrained_controller(roles, BACKBONES, seed)


@pytest.fixture(scope="module")
def world() -> SimulatedWorld:
    return SimulatedWorld(CATALOG, seed=0)


@pytest.fixture(scope="module")
def queries() -> list[Query]:
    return synthetic_split("test", 6, seed=0)


# ---- reading the user's orchestration


def test_roles_are_the_orchestrations_agents_in_order_with_their_instructions() -> None:
    roles = roles_from_orchestration(sequential(), critics=["skeptic"], domains={"calculator": ["math"]})
    assert roles.names == list(INSTRUCTIONS)
    assert roles.decision.name == "final_answerer"  # a sequential orchestration answers with its last agent
    assert str(roles["skeptic"].kind) == "critic" and str(roles["researcher"].kind) == "solver"
    assert roles["calculator"].domains == ("math",)
    assert roles["researcher"].prompt == INSTRUCTIONS["researcher"]
    assert roles["researcher"].description == "The researcher."


def test_each_shape_as_written_is_the_mas_its_orchestration_runs() -> None:
    written = read_orchestration(sequential()).as_written("qwen3-8b")
    assert [a.role for a in written.agents] == list(INSTRUCTIONS) and written.decision == "u3"
    assert set(written.edges) == {(f"u{i}", f"u{j}") for i in range(4) for j in range(i + 1, 4)}  # all read all before
    assert {a.backbone for a in written.agents} == {"qwen3-8b"}

    chained = SequentialBuilder(participants=user_agents(), chain_only_agent_responses=True)
    assert read_orchestration(chained).shape is Shape.CHAIN
    assert set(read_orchestration(chained).as_written("qwen3-8b").edges) == {("u0", "u1"), ("u1", "u2"), ("u2", "u3")}

    concurrent = read_orchestration(ConcurrentBuilder(participants=user_agents()), decision="skeptic")
    fan_in = concurrent.as_written("qwen3-8b")
    assert concurrent.shape is Shape.CONCURRENT and fan_in.agent(fan_in.decision).role == "skeptic"
    assert set(fan_in.edges) == {(a.id, fan_in.decision) for a in fan_in.agents if a.id != fan_in.decision}

    chat = read_orchestration(GroupChatBuilder(participant_factories=[lambda a=a: a for a in user_agents()]))
    assert chat.shape is Shape.GROUP_CHAT and chat.as_written("qwen3-8b").edges == written.edges


def test_what_the_plug_in_cannot_read_is_a_clear_error() -> None:
    with pytest.raises(AgentBalanceError, match="answers with its last agent"):
        read_orchestration(sequential(), decision="skeptic")
    with pytest.raises(AgentBalanceError, match="not a list"):
        read_orchestration(user_agents())  # type: ignore[arg-type]

    class Summarizer(Executor):
        @handler
        async def summarize(self, messages: list[Message], ctx: WorkflowContext[list[Message]]) -> None:
            await ctx.send_message(messages)

    with pytest.raises(AgentBalanceError, match="is a Summarizer; the plug-in takes agents"):
        read_orchestration(SequentialBuilder(participants=[*user_agents()[:3], Summarizer(id="sum")]))
    silent = Agent(SayingChat("x"), name="silent")
    with pytest.raises(AgentBalanceError, match="'silent' needs a name and instructions"):
        read_orchestration(ConcurrentBuilder(participants=[*user_agents(), silent]))
    with pytest.raises(AgentBalanceError, match="'boss' is not one of the agents"):
        read_orchestration(ConcurrentBuilder(participants=user_agents()), decision="boss").roles()


# ---- made budget-aware


def test_each_task_runs_the_controllers_mas_as_a_workflow_accounted_as_the_runner_does(
    world: SimulatedWorld, queries: list[Query]
) -> None:
    controller = tiny_controller()
    plugged = BudgetAwareOrchestration(
        sequential(), controller, world=world, critics=["skeptic"], domains={"calculator": ["math"]}
    )
    runs = asyncio.run(plugged.run_many(queries, concurrency=2))
    planned = controller.construct_many(queries)
    by_runner = Runner(world, plugged.roles).run_sync(list(zip(planned, queries, strict=True)))
    assert len({len(run.mas) for run in runs} | {len(run.mas.edges) for run in runs}) > 1  # plans differ per task
    for query, run, mas, expected in zip(queries, runs, planned, by_runner, strict=True):
        assert run.mas.to_json() == mas.to_json() and run.trace.id == query.id
        assert record(run.trace) == record(expected)
        decision = run.mas.decision
        assert run.result.get_outputs() == [Said(run.names[decision], decision, run.trace.agents[-1].text)]


def test_the_orchestration_as_written_runs_the_same_way(world: SimulatedWorld, queries: list[Query]) -> None:
    plugged = BudgetAwareOrchestration(sequential(), tiny_controller(), world=world)
    written = plugged.as_written("qwen3-235b-a22b")
    run = asyncio.run(plugged.run_mas(written, queries[0]))
    (expected,) = Runner(world, plugged.roles).run_sync([(written, queries[0])])
    assert record(run.trace) == record(expected) and len(run.trace.agents) == 4


def test_a_gated_off_agent_is_not_in_the_workflow_and_the_task_completes(
    world: SimulatedWorld, queries: list[Query], monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = tiny_controller()
    gate_off(controller, "skeptic", monkeypatch)
    run = asyncio.run(BudgetAwareOrchestration(sequential(), controller, world=world).run(queries[0]))
    assert "skeptic" not in {a.role for a in run.mas.agents} and len(run.mas) == 3
    assert "skeptic" not in run.names.values() and run.trace.answer is not None


def test_over_chat_clients_each_backbone_answers_its_agents_and_the_users_model_is_never_called() -> None:
    users_model = SayingChat("the user's own model")
    clients = {name: SayingChat(f"{name} says Answer: B") for name in BACKBONES}
    plugged = BudgetAwareOrchestration(sequential(users_model), tiny_controller(), clients=clients, catalog=CATALOG)
    query = Query(id="mcq", question="Pick one.", choices=("x", "y", "z"), answer="B")
    run = asyncio.run(plugged.run(query))
    assert users_model.received == []
    assert sum(len(client.received) for client in clients.values()) == len(run.mas)
    for agent, traced in zip(run.mas.agents, run.trace.agents, strict=True):
        assert traced.text == f"{agent.backbone} says Answer: B"
        assert traced.cost_usd == pytest.approx(CATALOG[agent.backbone].call_cost_usd(100, 20))
    system_prompts = {messages[0].text for client in clients.values() for messages in client.received}
    assert system_prompts == {INSTRUCTIONS[a.role] for a in run.mas.agents}  # the user's instructions, as written
    assert run.trace.answer == "B" and run.trace.world == "agent-framework"


def test_a_controller_that_does_not_fit_the_orchestration_is_refused_at_once(world: SimulatedWorld) -> None:
    with pytest.raises(AgentBalanceError, match="trained on roles"):
        BudgetAwareOrchestration(SequentialBuilder(participants=user_agents()[1:]), tiny_controller(), world=world)
    with pytest.raises(AgentBalanceError, match="decision role is 'final_answerer', not 'skeptic'"):
        BudgetAwareOrchestration(
            ConcurrentBuilder(participants=user_agents()), tiny_controller(), decision="skeptic", world=world
        )
    with pytest.raises(AgentBalanceError, match="no model client for backbone"):
        clients = {"qwen3-8b": SayingChat("x")}
        BudgetAwareOrchestration(sequential(), tiny_controller(), clients=clients, catalog=CATALOG)
    with pytest.raises(AgentBalanceError, match="trained for one budget"):
        BudgetAwareOrchestration(sequential(), tiny_controller(), world=world, budget=Budget(0.1, 5.0))


def test_from_run_loads_a_controller_over_the_orchestrations_roles(
    world: SimulatedWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = loads_instead(tiny_controller(), monkeypatch)
    encoder = HashEncoder()
    chat = GroupChatBuilder(participants=user_agents(), selection_func=lambda state: "researcher")
    plugged = BudgetAwareOrchestration.from_run("runs/x", chat, world=world, encoder=encoder)
    (options,) = loaded
    assert options["folder"] == "runs/x" and options["world"] is world and options["encoder"] is encoder
    assert options["roles"].names == plugged.roles.names == list(INSTRUCTIONS)
    assert plugged.shape is Shape.GROUP_CHAT and plugged.encoder is plugged.controller.encoder
