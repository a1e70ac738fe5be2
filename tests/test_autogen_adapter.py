"""The AutoGen adapter: a MAS as a GraphFlow (shape, visibility), the world-backed client (offline, exact
usage and cost), the plug-in over a user's AutoGen agents, the exported script, and the no-AutoGen path."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import runpy
import subprocess
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat", reason='AutoGen is an optional extra: pip install "agentbalance[autogen]"')

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)

from agentbalance.adapters.autogen import (
    AgentBalanceTeam,
    AgentSlot,
    GraphFlowRunner,
    WorldChatClient,
    WorldClients,
    autogen_names,
    autogen_script,
    build_graphflow,
    roles_from_agents,
)
from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AgentResult, Execution
from agentbalance.runtime.runner import Runner
from agentbalance.splits import synthetic_split
from agentbalance.trained import TrainedController
from agentbalance.worlds.base import Completion
from agentbalance.worlds.simulated import SimulatedWorld
from tests.conftest import REPO
from tests.fakes import HashEncoder, ScriptedWorld, cascade_mas, gate_off, loads_instead, untrained_controller

CATALOG = Catalog.load()
BACKBONES = ("qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b")
ECHO_INFO: ModelInfo = {
    "vision": False,
    "function_calling": False,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


class EchoClient(ChatCompletionClient):
    """Replies with who it is and records every message list it receives (what its agent saw)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.received: list[list[LLMMessage]] = []

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        self.received.append(list(messages))
        usage = RequestUsage(prompt_tokens=10 * len(messages), completion_tokens=7)
        return CreateResult(finish_reason="stop", content=f"{self.name} answers", usage=usage, cached=False)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages)

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    total_usage = actual_usage

    def count_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 0

    def remaining_tokens(self, messages: Sequence[LLMMessage], **kwargs: Any) -> int:
        return 1000

    @property
    def capabilities(self) -> Any:  # type: ignore[override]
        return ECHO_INFO

    @property
    def model_info(self) -> ModelInfo:
        return ECHO_INFO


def user_agents() -> list[AssistantAgent]:
    """A user's own 4-agent AutoGen team (their client is never used by the plug-in)."""
    client = EchoClient("users-own-model")
    prompts = {
        "researcher": "You research the facts behind the question. End with `Answer: X`.",
        "skeptic": "You look for errors in the other agents' answers and say which answer survives.",
        "calculator": "You compute every quantity step by step. Put the final answer in \\boxed{}.",
        "final_answerer": "You read the other agents and give the one final answer.",
    }
    return [AssistantAgent(name, model_client=client, system_message=prompt) for name, prompt in prompts.items()]


def user_roles() -> RoleSet:
    return roles_from_agents(user_agents(), "final_answerer", critics=["skeptic"], domains={"calculator": ["math"]})


def tiny_controller(seed: int = 0) -> TrainedController:
    """An untrained controller over the user's roles and three real backbones (cheap: a hash encoder)."""
    return untrained_controller(user_roles(), BACKBONES, seed)


def chain_and_fork() -> MAS:
    """researcher -> skeptic -> final; calculator -> final. The researcher is NOT a predecessor of the final agent."""
    agents = [
        Agent(id="a0", role="researcher", backbone="qwen3-8b"),
        Agent(id="a1", role="skeptic", backbone="qwen3-30b-a3b"),
        Agent(id="a2", role="calculator", backbone="qwen3-8b"),
        Agent(id="a3", role="final_answerer", backbone="qwen3-235b-a22b"),
    ]
    return MAS(agents, [("a0", "a1"), ("a1", "a3"), ("a2", "a3")], "a3")


@pytest.fixture(scope="module")
def world() -> SimulatedWorld:
    return SimulatedWorld(CATALOG, seed=0)


@pytest.fixture(scope="module")
def queries() -> list[Query]:
    return synthetic_split("test", 6, seed=0)


def echo_factory() -> tuple[dict[str, EchoClient], Any]:
    made: dict[str, EchoClient] = {}

    def factory(slot: AgentSlot) -> EchoClient:
        made[slot.agent.id] = EchoClient(slot.name)
        return made[slot.agent.id]

    return made, factory


# ---- MAS -> GraphFlow


def test_graph_has_the_mas_nodes_edges_and_the_decision_agent_as_its_only_leaf() -> None:
    mas = chain_and_fork()
    _, factory = echo_factory()
    built = build_graphflow(mas, factory, user_roles())
    names = built.names
    assert set(built.graph.nodes) == set(names.values())
    edges = {(name, edge.target) for name, node in built.graph.nodes.items() for edge in node.edges}
    assert edges == {(names[s], names[t]) for s, t in mas.edges}
    assert built.graph.get_leaf_nodes() == {names["a3"]}
    assert built.graph.get_start_nodes() == {names["a0"], names["a2"]}
    assert [p.name for p in built.flow._participants] == [names[i] for i in mas.topological_order()]


def test_agent_names_are_unique_python_identifiers_and_keep_the_mapping() -> None:
    agents = [
        Agent(id="a-0", role="Final Answerer", backbone="m"),
        Agent(id="a_0", role="Final Answerer", backbone="m"),
        Agent(id="u", role="user", backbone="m"),
        Agent(id="k", role="class", backbone="m"),
        Agent(id="d", role="2nd opinion", backbone="m"),
    ]
    mas = MAS(agents, [("a-0", "d"), ("a_0", "d"), ("u", "d"), ("k", "d")], "d")
    names = autogen_names(mas)
    assert set(names) == {a.id for a in agents}
    assert len(set(names.values())) == len(agents)
    assert all(name.isidentifier() and name != "user" for name in names.values())
    assert names["d"] == "agent_2nd_opinion"
    assert autogen_names(mas) == names  # deterministic: recomputable from the MAS alone


def test_each_agent_sees_only_the_task_and_its_predecessors_last_messages() -> None:
    mas = chain_and_fork()
    made, factory = echo_factory()
    roles = user_roles()
    built = build_graphflow(mas, factory, roles)
    asyncio.run(built.flow.run(task="What is 6 times 7?"))
    for agent in mas.agents:
        (messages,) = made[agent.id].received  # each agent ran exactly once
        assert isinstance(messages[0], SystemMessage) and messages[0].content == roles[agent.role].prompt
        sources = [m.source for m in messages[1:] if isinstance(m, UserMessage)]
        expected = ["user", *(built.names[p] for p in mas.predecessors(agent.id))]
        assert sources == expected, agent.id
    final_saw = [m.content for m in made["a3"].received[0][1:]]
    assert f"{built.names['a0']} answers" not in final_saw  # the researcher is not a predecessor of a3


def test_a_missing_client_or_role_is_a_clear_error() -> None:
    with pytest.raises(AgentBalanceError, match="no model client for backbone 'qwen3-235b-a22b'"):
        build_graphflow(chain_and_fork(), {"qwen3-8b": EchoClient("x"), "qwen3-30b-a3b": EchoClient("y")}, user_roles())
    with pytest.raises(AgentBalanceError, match="role library"):
        build_graphflow(chain_and_fork(), echo_factory()[1], RoleSet.load("math"))


# ---- the world-backed client


def test_world_backed_flow_reproduces_the_runner_exactly(world: SimulatedWorld, queries: list[Query]) -> None:
    """Same answers, usage, cost and modelled latency as agentbalance's own runner: the world sees the same calls."""
    mas, roles = chain_and_fork(), user_roles()
    team = AgentBalanceTeam(user_agents(), "final_answerer", tiny_controller(), world=world, critics=["skeptic"],
                            domains={"calculator": ["math"]})  # fmt: skip
    runner = Runner(world, roles)
    for query in queries:
        run = asyncio.run(team.run_mas(mas, query))
        expected = asyncio.run(runner.run(mas, query))
        assert (run.trace.answer, run.trace.correct) == (expected.answer, expected.correct)
        assert run.trace.prompt_tokens == expected.prompt_tokens
        assert run.trace.completion_tokens == expected.completion_tokens
        assert run.trace.cost_usd == pytest.approx(expected.cost_usd, rel=1e-12)
        assert run.trace.latency_s == pytest.approx(expected.latency_s, rel=1e-12)
        assert [a.answer for a in run.trace.agents] == [a.answer for a in expected.agents]


def test_trace_usage_is_summed_from_models_usage_and_priced_from_the_catalog(
    world: SimulatedWorld, queries: list[Query]
) -> None:
    team = AgentBalanceTeam(user_agents(), "final_answerer", tiny_controller(), world=world)
    run = asyncio.run(team.run_mas(chain_and_fork(), queries[0]))
    for agent in run.trace.agents:
        usages = [m.models_usage for m in run.result.messages if m.source == run.names[agent.id] and m.models_usage]
        assert agent.prompt_tokens == sum(u.prompt_tokens for u in usages) > 0
        assert agent.completion_tokens == sum(u.completion_tokens for u in usages) > 0
        backbone = CATALOG[agent.backbone]
        assert agent.cost_usd == pytest.approx(
            (agent.prompt_tokens * backbone.price_in + agent.completion_tokens * backbone.price_out) / 1e6
        )
    assert run.trace.cost_usd == pytest.approx(sum(a.cost_usd for a in run.trace.agents))
    assert run.trace.latency_s == max(a.end_s for a in run.trace.agents) > 0


def test_world_client_inputs_are_the_completions_behind_the_messages_received(world: SimulatedWorld) -> None:
    mas, query = chain_and_fork(), Query(id="q", question="Compute 17 * 3.", answer="51", domain="math")
    built = build_graphflow(mas, WorldClients(world, query), user_roles())
    asyncio.run(built.flow.run(task=query.render()))
    for agent in mas.agents:
        client = built.clients[agent.id]
        assert isinstance(client, WorldChatClient)
        (call,) = client.calls
        assert call.query == query
        assert [u.agent_id for u in call.inputs] == list(mas.predecessors(agent.id))


def test_world_client_speaks_the_chat_completion_protocol_without_a_tokenizer(world: SimulatedWorld) -> None:
    roles = user_roles()
    slot = AgentSlot(Agent(id="a0", role="calculator", backbone="qwen3-8b"), "calculator", roles["calculator"])
    client = WorldClients(world)(slot)  # no Query given: the task text becomes one
    messages = [SystemMessage(content=slot.role.prompt), UserMessage(content="What is 12 + 30?", source="user")]

    async def stream() -> list[str | CreateResult]:
        return [chunk async for chunk in client.create_stream(messages)]

    chunks = asyncio.run(stream())
    assert isinstance(chunks[0], str) and isinstance(chunks[-1], CreateResult)
    usage = chunks[-1].usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert client.total_usage() == client.actual_usage() == usage
    assert client.calls[0].query.question == "What is 12 + 30?"
    assert 0 < client.count_tokens(messages) < client.remaining_tokens(messages)
    assert client.model_info["function_calling"] is False
    stranger = UserMessage(content="I made this up", source="someone_else")
    with pytest.raises(AgentBalanceError, match="no world-backed client of this flow produced"):
        asyncio.run(client.create([*messages, stranger]))


def test_a_failed_world_call_is_recorded_and_the_flow_carries_on() -> None:
    scripted = ScriptedWorld(CATALOG, fail_agents={"a1"})
    team = AgentBalanceTeam(user_agents(), "final_answerer", tiny_controller(), world=scripted)
    run = asyncio.run(team.run_mas(chain_and_fork(), Query(id="q", question="2 + 2?", answer="4")))
    by_id = {a.id: a for a in run.trace.agents}
    assert by_id["a1"].error is not None and "HTTP 500" in by_id["a1"].error
    final_call = next(c for c in scripted.calls if c.agent.id == "a3")
    assert [u.agent_id for u in final_call.inputs] == ["a2"]  # like the runner: no input from a failed agent
    assert run.trace.answer == "4"


class FailingClient(EchoClient):
    """An ordinary client whose endpoint is down."""

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        self.received.append(list(messages))
        raise ConnectionError("endpoint unreachable")


def test_a_failing_ordinary_client_is_recorded_and_the_flow_carries_on() -> None:
    """As the runner records an unexpected client error: the agent's error, what it cost (nothing), the rest runs."""
    clients: dict[str, ChatCompletionClient] = {name: EchoClient(f"{name} says Answer: B") for name in BACKBONES}
    clients["qwen3-30b-a3b"] = FailingClient("down")  # the skeptic's backbone
    runner = GraphFlowRunner(user_roles(), clients=clients, catalog=CATALOG)
    query = Query(id="mcq", question="Pick one.", choices=("x", "y", "z"), answer="B")
    run = asyncio.run(runner.run(chain_and_fork(), query))
    by_id = {a.id: a for a in run.trace.agents}
    assert by_id["a1"].error == "ConnectionError: endpoint unreachable"
    assert (by_id["a1"].cost_usd, by_id["a1"].prompt_tokens, by_id["a1"].answer) == (0.0, 0, None)
    assert by_id["a3"].error is None and run.trace.answer == "B"
    assert run.trace.correct is None  # no grader: ungraded (the one rule), not guessed


def test_a_grader_grades_every_task_of_ordinary_clients() -> None:
    """The one grading rule: without a world that knows the truth, the task's scorer decides, gold or not."""
    clients = {name: EchoClient(f"{name} says Answer: B") for name in BACKBONES}
    graded: list[tuple[str, str | None]] = []

    def grader(query: Query, answer: str | None) -> bool | None:
        graded.append((query.id, answer))
        return answer == "B"

    runner = GraphFlowRunner(user_roles(), clients=clients, catalog=CATALOG, grader=grader)
    no_gold = Query(id="free", question="Pick one.", choices=("x", "y", "z"))
    run = asyncio.run(runner.run(chain_and_fork(), no_gold))
    assert run.trace.correct is True and graded == [("free", "B")]


# ---- the plug-in


def test_gated_off_agent_is_not_in_the_graph_and_the_flow_completes(
    world: SimulatedWorld, queries: list[Query], monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = tiny_controller()
    gate_off(controller, "skeptic", monkeypatch)
    team = AgentBalanceTeam(user_agents(), "final_answerer", controller, world=world)
    run = asyncio.run(team.run(queries[0]))
    assert "skeptic" not in {a.role for a in run.mas.agents} and len(run.mas) == 3
    graph = build_graphflow(run.mas, echo_factory()[1], team.roles).graph
    assert "skeptic" not in graph.nodes and graph.get_leaf_nodes() == {run.names[run.mas.decision]}
    spoke = {m.source for m in run.result.messages if isinstance(m, BaseChatMessage)}
    assert spoke == {"user", *run.names.values()}  # every agent of the graph ran: no stalled join


def test_agentbalance_team_runs_offline_end_to_end_with_a_fresh_flow_per_task(
    world: SimulatedWorld, queries: list[Query]
) -> None:
    team = AgentBalanceTeam(user_agents(), "final_answerer", tiny_controller(), world=world, critics=["skeptic"])
    runs = asyncio.run(team.run_many(queries[:3], concurrency=2))
    for query, run in zip(queries, runs, strict=False):
        assert run.trace.id == query.id and run.mas.query_id == query.id
        assert run.trace.answer is not None and run.trace.correct is not None
        assert run.trace.cost_usd > 0 and run.trace.latency_s > 0 and run.trace.world == "simulated"
        tasks = [m for m in run.result.messages if m.source == "user"]
        assert [m.to_text() for m in tasks] == [query.render()]  # nothing from another task
        final = [m for m in run.result.messages if m.source == run.names[run.mas.decision]]
        assert run.trace.agents[-1].text == final[-1].to_text()
    single = asyncio.run(team.run(queries[0]))
    assert single.trace.answer == runs[0].trace.answer  # same task, same MAS, same world: same outcome
    text_run = asyncio.run(team.run("What is 2 + 3?"))
    assert text_run.trace.id.startswith("task-") and text_run.trace.correct is None


def test_roles_come_from_the_users_agents() -> None:
    roles = user_roles()
    assert roles.names == ["researcher", "skeptic", "calculator", "final_answerer"]
    assert roles.decision.name == "final_answerer"
    assert str(roles["skeptic"].kind) == "critic" and str(roles["researcher"].kind) == "solver"
    assert roles["calculator"].domains == ("math",)
    assert roles["researcher"].prompt.startswith("You research")
    with pytest.raises(AgentBalanceError, match="'boss' is not one of the agents"):
        roles_from_agents(user_agents(), "boss")


def test_team_rejects_a_controller_of_other_roles_and_missing_clients(world: SimulatedWorld) -> None:
    agents = user_agents()
    with pytest.raises(AgentBalanceError, match="trained on roles"):
        AgentBalanceTeam(agents[1:], "final_answerer", tiny_controller(), world=world)
    with pytest.raises(AgentBalanceError, match="no model client for backbone"):
        AgentBalanceTeam(
            agents, "final_answerer", tiny_controller(), clients={"qwen3-8b": EchoClient("x")}, catalog=CATALOG
        )
    with pytest.raises(AgentBalanceError, match="exactly one of"):
        AgentBalanceTeam(agents, "final_answerer", tiny_controller())


def test_from_run_loads_a_trained_controller_over_the_teams_roles_and_backbones(
    world: SimulatedWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = loads_instead(tiny_controller(), monkeypatch)
    encoder = HashEncoder()
    team = AgentBalanceTeam.from_run("runs/x", user_agents(), "final_answerer", world=world, encoder=encoder)
    (options,) = loaded
    assert options["folder"] == "runs/x" and options["world"] is world and options["encoder"] is encoder
    assert options["catalog"] is None and options["roles"].names == team.roles.names
    mas = team.plan([Query(id="q7", question="What is 2 + 3?"), "What is 2 + 3?"])
    assert [m.query_id for m in mas] == ["q7", "task-" + hashlib.sha256(b"What is 2 + 3?").hexdigest()[:12]]


def test_a_budget_the_controller_cannot_serve_is_refused_at_once(world: SimulatedWorld) -> None:
    with pytest.raises(AgentBalanceError, match="trained for one budget"):
        AgentBalanceTeam(user_agents(), "final_answerer", tiny_controller(), world=world, budget=Budget(0.1, 5.0))


def test_team_over_ordinary_clients_measures_latency_and_parses_answers() -> None:
    clients: Mapping[str, ChatCompletionClient] = {name: EchoClient(f"{name} says Answer: B") for name in BACKBONES}
    team = AgentBalanceTeam(user_agents(), "final_answerer", tiny_controller(), clients=clients, catalog=CATALOG)
    query = Query(id="mcq", question="Pick one.", choices=("x", "y", "z"), answer="B")
    run = asyncio.run(team.run_mas(chain_and_fork(), query))
    assert run.trace.answer == "B" and run.trace.correct is None  # no grader given: unknown, not guessed
    assert run.trace.world == "autogen" and run.trace.latency_s >= 0
    assert run.trace.cost_usd > 0


# ---- the exported script


def test_exported_script_compiles_builds_the_same_graph_and_holds_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123")
    mas, roles = chain_and_fork(), user_roles()
    script = autogen_script(mas, CATALOG, roles, query="What is 6 times 7?")
    compile(script, "generated_flow.py", "exec")
    assert "sk-test-secret-value-123" not in script
    path = tmp_path / "generated_flow.py"
    path.write_text(script, encoding="utf-8")
    namespace = runpy.run_path(str(path), run_name="generated_flow")  # the __main__ block does not run

    echo = {name: EchoClient(name) for name in {a.backbone for a in mas.agents}}
    flow = namespace["build_flow"](echo)
    names = autogen_names(mas)
    graph = flow._graph
    assert set(graph.nodes) == set(names.values())
    assert {(n, e.target) for n, node in graph.nodes.items() for e in node.edges} == {
        (names[s], names[t]) for s, t in mas.edges
    }
    assert graph.get_leaf_nodes() == {names[mas.decision]} == {namespace["DECISION"]}
    result = asyncio.run(flow.run(task="What is 6 times 7?"))
    assert [m.source for m in result.messages if isinstance(m, BaseChatMessage)][-1] == names[mas.decision]

    openai_clients = namespace["openai_clients"]()  # constructed only (with model_info), never called
    assert set(openai_clients) == {a.backbone for a in mas.agents}
    assert namespace["BACKBONES"]["qwen3-8b"]["arguments"]["extra_body"] == {"enable_thinking": False}


def test_exported_script_of_a_mas_without_conditional_agents_is_unchanged() -> None:
    """Byte for byte the script written before conditional agents existed (regenerate the golden file only
    for a deliberate change of the plain script: model ids, request arguments, or the template itself)."""
    golden = (REPO / "tests" / "golden" / "autogen_script_plain.txt").read_text(encoding="utf-8")
    assert autogen_script(chain_and_fork(), CATALOG, user_roles(), query="What is 6 times 7?") == golden


class SayingClient(EchoClient):
    """Says one fixed text (its name) whatever it is asked, and records what it received."""

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        self.received.append(list(messages))
        usage = RequestUsage(prompt_tokens=10, completion_tokens=7)
        return CreateResult(finish_reason="stop", content=self.name, usage=usage, cached=False)


def cascade(when: str = "disagree") -> MAS:
    """Two answerers on different backbones -> a conditional decision agent on a third."""
    roles = ("researcher", "calculator", "final_answerer")
    return cascade_mas(roles, ("qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b"), when)  # type: ignore[arg-type]


def run_exported(mas: MAS, clients: Mapping[str, ChatCompletionClient], tmp_path: Path) -> BaseChatMessage:
    """Generate the script of `mas`, load it (its __main__ block does not run), run its flow over `clients`;
    the decision agent's message."""
    path = tmp_path / "generated_flow.py"
    path.write_text(autogen_script(mas, CATALOG, user_roles()), encoding="utf-8")
    namespace = runpy.run_path(str(path), run_name="generated_flow")
    result = asyncio.run(namespace["build_flow"](clients).run(task="What is 6 times 7?"))
    (final,) = [m for m in result.messages if isinstance(m, BaseChatMessage) and m.source == namespace["DECISION"]]
    return final


def test_exported_cascade_whose_inputs_agree_never_calls_the_decision_model(tmp_path: Path) -> None:
    """Answers read from a \\boxed{} and from an `Answer:` line, compared after normalising: they agree."""
    decision = SayingClient("Answer: 43")
    clients = {"qwen3-8b": SayingClient("6 times 7 is \\boxed{42}"), "qwen3-30b-a3b": SayingClient("Answer: 42.")}
    final = run_exported(cascade(), {**clients, "qwen3-235b-a22b": decision}, tmp_path)
    assert decision.received == []
    assert final.to_text() == "6 times 7 is \\boxed{42}"  # the agreed input's message, passed on
    assert final.models_usage == RequestUsage(prompt_tokens=0, completion_tokens=0)


def test_exported_cascade_whose_inputs_disagree_asks_the_decision_agent_afresh(tmp_path: Path) -> None:
    """One call: its system prompt, the task and agentbalance's own disagreement note, no input messages."""
    decision = SayingClient("Answer: 42")
    clients = {"qwen3-8b": SayingClient("\\boxed{42}"), "qwen3-30b-a3b": SayingClient("Answer: 41")}
    final = run_exported(cascade(), {**clients, "qwen3-235b-a22b": decision}, tmp_path)
    (messages,) = decision.received
    system, task, note = messages
    assert isinstance(system, SystemMessage) and system.content == user_roles()["final_answerer"].prompt
    assert isinstance(task, UserMessage) and task.content == "What is 6 times 7?"
    assert isinstance(note, UserMessage) and note.source == "user"

    execution = Execution(cascade(), Query(id="q", question="What is 6 times 7?"), user_roles(), CATALOG)
    for agent_id, text, answer in (("a", "\\boxed{42}", "42"), ("b", "Answer: 41", "41")):
        execution.finish(agent_id, AgentResult(Completion(text, answer, 10, 7, 0.0, 1.0)))
    assert execution.decide("d") is None  # agentbalance escalates too, and words the note the same
    assert note.content == execution.call("d").note
    assert final.to_text() == "Answer: 42" and final.models_usage == RequestUsage(prompt_tokens=10, completion_tokens=7)


def test_exported_never_agent_says_its_inputs_majority_message_without_a_call(tmp_path: Path) -> None:
    """Unweighted: two inputs saying 42 outvote an earlier one saying 41."""
    agents = [
        Agent(id="a", role="researcher", backbone="qwen3-8b"),
        Agent(id="s", role="skeptic", backbone="qwen3-30b-a3b"),
        Agent(id="c", role="calculator", backbone="qwen3-30b-a3b"),
        Agent(id="d", role="final_answerer", backbone="qwen3-235b-a22b", when="never"),
    ]
    mas = MAS(agents, [("a", "d"), ("s", "d"), ("c", "d")], "d")
    decision = SayingClient("Answer: 43")
    clients = {"qwen3-8b": SayingClient("Answer: 41"), "qwen3-30b-a3b": SayingClient("so \\boxed{42}")}
    final = run_exported(mas, {**clients, "qwen3-235b-a22b": decision}, tmp_path)
    assert decision.received == []
    assert final.to_text() == "so \\boxed{42}" and final.models_usage == RequestUsage(
        prompt_tokens=0, completion_tokens=0
    )


def test_exported_conditional_agent_whose_call_fails_says_its_inputs_majority_message(tmp_path: Path) -> None:
    """A tie of two: the earlier input's message."""
    clients = {"qwen3-8b": SayingClient("Answer: 41"), "qwen3-30b-a3b": SayingClient("\\boxed{42}")}
    final = run_exported(cascade(), {**clients, "qwen3-235b-a22b": FailingClient("down")}, tmp_path)
    assert final.to_text() == "Answer: 41"


# ---- without AutoGen


def test_without_autogen_the_adapter_raises_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in ("autogen_agentchat", "autogen_core")]:
        monkeypatch.setitem(sys.modules, name, None)  # every `import autogen_...` now fails
    monkeypatch.setitem(sys.modules, "autogen_agentchat", None)
    monkeypatch.delitem(sys.modules, "agentbalance.adapters.autogen")
    with pytest.raises(AgentBalanceError, match=r'pip install "agentbalance\[autogen\]"'):
        importlib.import_module("agentbalance.adapters.autogen")


@pytest.mark.slow
def test_importing_agentbalance_never_imports_autogen() -> None:
    code = (
        "import sys; sys.modules['autogen_agentchat'] = None; sys.modules['autogen_core'] = None\n"
        "import agentbalance, agentbalance.adapters\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
