"""The exported Agent Framework and LangGraph scripts, run as a user runs them against an OpenAI-compatible server on
127.0.0.1: the MAS's calls with the catalog's request arguments, no key in the file, conditional agents gated as
agentbalance gates them; and `export` of a MAS you wrote, in every format."""

from __future__ import annotations

import asyncio
import json
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import AgentResult, Execution
from agentbalance.worlds.base import Completion
from tests.conftest import agentbalance
from tests.fakes import fork
from tests.loopback_server import LoopbackServer, RecordedRequest

CATALOG = Catalog.load()
ROLES = RoleSet.load("general")
KEY = "sk-loopback-secret-42"
SCRIPTS = {
    "agent-framework": ("agent_framework", "agent-framework"),
    "langgraph": ("langgraph.graph", "langgraph"),
}


@pytest.fixture(params=list(SCRIPTS))
def framework(request: pytest.FixtureRequest) -> str:
    module, extra = SCRIPTS[request.param]
    pytest.importorskip(module, reason=f'{request.param} is an optional extra: pip install "agentbalance[{extra}]"')
    return str(request.param)


def script_of(framework: str, mas: MAS, query: str | None = None) -> str:
    if framework == "agent-framework":
        from agentbalance.adapters.agent_framework import agent_framework_script

        return agent_framework_script(mas, CATALOG, ROLES, query=query)
    from agentbalance.adapters.langgraph import langgraph_script

    return langgraph_script(mas, CATALOG, ROLES, query=query)


def run_script(framework: str, script: str, folder: Path, task: str) -> str | None:
    """Load the script (its __main__ block does not run), build its workflow or graph over its default OpenAI
    clients, run it on `task`; the decision agent's text."""
    path = folder / "exported.py"
    path.write_text(script, encoding="utf-8")
    namespace = runpy.run_path(str(path), run_name="exported")
    if framework == "agent-framework":
        result = asyncio.run(namespace["build_workflow"]().run(task))
        (final,) = result.get_outputs()
        return final.text  # type: ignore[no-any-return]
    state = asyncio.run(namespace["build_graph"]().ainvoke({"task": task, "said": {}, "usage": {}}))
    return state["said"].get(namespace["DECISION"])  # type: ignore[no-any-return]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    """A loopback server the scripts reach through $AGENTBALANCE_BASE_URL, with their key from the environment."""
    with LoopbackServer(api_keys={KEY}) as running:
        monkeypatch.setenv("AGENTBALANCE_BASE_URL", running.base_url)
        monkeypatch.setenv("AGENTBALANCE_API_KEY", KEY)
        yield running


def saying(texts: dict[str, str]) -> Callable[[dict[str, Any]], str]:
    """A responder whose answer depends on the model asked."""
    return lambda body: texts[str(body["model"])]


def calls(server: LoopbackServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.status == 200]


def cascade(when: str = "disagree") -> MAS:
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="qwen3-8b"),
        Agent(id="b", role="Scientist", backbone="qwen3-30b-a3b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b", when=when),  # type: ignore[arg-type]
    ]
    return MAS(agents, [("a", "d"), ("b", "d")], "d")


def test_the_script_runs_each_agent_once_in_dag_order_with_the_catalogs_arguments_and_no_key(
    framework: str, server: LoopbackServer, tmp_path: Path
) -> None:
    server.responder = saying({"qwen3-8b": "Answer: 4", "qwen3-30b-a3b": "I agree. Answer: 4", "qwen3-235b-a22b": "4"})
    script = script_of(framework, fork(), query="What is 2 + 2?")
    assert KEY not in script and "sk-" not in script
    compile(script, "exported.py", "exec")
    assert run_script(framework, script, tmp_path, "What is 2 + 2?") == "4"
    made = calls(server)
    assert [r.body["model"] for r in made] == ["qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b"]
    for request in made:
        backbone = CATALOG[str(request.body["model"])]
        assert request.body["max_tokens"] == backbone.completion_limit()  # the catalog's limit, by its own name
        assert request.body["temperature"] == 0.0
        assert request.headers.get("authorization") == f"Bearer {KEY}"
    system, user = made[2].body["messages"]
    assert system == {"role": "system", "content": ROLES["Decision Maker"].prompt}
    assert user["content"].startswith("Question:\nWhat is 2 + 2?\n\nMessages from other agents:")
    assert "[a | Knowledgeable Expert]\nAnswer: 4" in user["content"]
    assert "[b | Scientist]\nI agree. Answer: 4" in user["content"]


def test_a_cascade_whose_inputs_agree_never_calls_the_decision_model(
    framework: str, server: LoopbackServer, tmp_path: Path
) -> None:
    server.responder = saying({"qwen3-8b": "so \\boxed{42}", "qwen3-30b-a3b": "Answer: 42.", "qwen3-235b-a22b": "43"})
    assert run_script(framework, script_of(framework, cascade()), tmp_path, "What is 6 times 7?") == "so \\boxed{42}"
    # the two answerers run concurrently: either may reach the server first
    assert sorted(r.body["model"] for r in calls(server)) == ["qwen3-30b-a3b", "qwen3-8b"]


def test_a_cascade_whose_inputs_disagree_asks_the_decision_agent_afresh_with_agentbalances_note(
    framework: str, server: LoopbackServer, tmp_path: Path
) -> None:
    server.responder = saying({"qwen3-8b": "\\boxed{42}", "qwen3-30b-a3b": "Answer: 41", "qwen3-235b-a22b": "42!"})
    assert run_script(framework, script_of(framework, cascade()), tmp_path, "What is 6 times 7?") == "42!"
    *_, decision = calls(server)
    execution = Execution(cascade(), Query(id="q", question="What is 6 times 7?"), ROLES, CATALOG)
    for agent_id, text, answer in (("a", "\\boxed{42}", "42"), ("b", "Answer: 41", "41")):
        execution.finish(agent_id, AgentResult(Completion(text, answer, 10, 7, 0.0, 1.0)))
    assert execution.decide("d") is None  # agentbalance escalates too, and asks the same messages
    assert decision.body["messages"] == execution.call("d").messages


def test_a_never_agent_passes_its_inputs_majority_message_on(
    framework: str, server: LoopbackServer, tmp_path: Path
) -> None:
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="qwen3-8b"),
        Agent(id="b", role="Knowledgeable Expert", backbone="qwen3-30b-a3b"),
        Agent(id="c", role="Scientist", backbone="qwen3-30b-a3b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b", when="never"),
    ]
    mas = MAS(agents, [("a", "d"), ("b", "d"), ("c", "d")], "d")
    server.responder = saying({"qwen3-8b": "Answer: 41", "qwen3-30b-a3b": "so \\boxed{42}", "qwen3-235b-a22b": "x"})
    assert run_script(framework, script_of(framework, mas), tmp_path, "What is 6 times 7?") == "so \\boxed{42}"
    assert "qwen3-235b-a22b" not in [r.body["model"] for r in calls(server)]


def test_a_conditional_agent_whose_call_fails_passes_its_inputs_majority_message_on(
    framework: str, server: LoopbackServer, tmp_path: Path
) -> None:
    from tests.loopback_server import Fault

    server.responder = saying({"qwen3-8b": "Answer: 41", "qwen3-30b-a3b": "\\boxed{42}", "qwen3-235b-a22b": "x"})
    server.always("qwen3-235b-a22b", Fault(status=400, message="bad request"))  # not retried by the SDK
    assert run_script(framework, script_of(framework, cascade()), tmp_path, "What is 6 times 7?") == "Answer: 41"


# ---- export of a MAS you wrote


def test_export_writes_a_mas_you_wrote_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "mas.json").write_text(json.dumps(cascade().to_json()), encoding="utf-8")
    as_json = agentbalance("export", "--mas", "mas.json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    assert MAS.from_json(json.loads(as_json.stdout)) == cascade()
    mermaid = agentbalance("export", "--mas", "mas.json", "--format", "mermaid", cwd=tmp_path)
    assert mermaid.stdout.startswith("flowchart LR")
    for output_format, module, builds in (
        ("autogen", "autogen_agentchat", "def build_flow"),
        ("agent-framework", "agent_framework", "def build_workflow"),
        ("langgraph", "langgraph.graph", "def build_graph"),
    ):
        pytest.importorskip(module)
        args = ("--mas", "mas.json", "--format", output_format, "--roles", "general")
        done = agentbalance("export", *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        compile(done.stdout, f"{output_format}.py", "exec")
        assert builds in done.stdout and "Decision_Maker" in done.stdout


def test_export_reads_a_mas_against_the_catalog_and_roles_given(tmp_path: Path) -> None:
    shipped = Catalog.load()
    mine = {"backbones": [{**shipped["qwen3-8b"].model_dump(mode="json", exclude_none=True), "name": "my-model"}]}
    (tmp_path / "mine.yaml").write_text(json.dumps(mine), encoding="utf-8")
    mas = MAS([Agent(id="d", role="Mathematician", backbone="my-model")], [], "d")
    (tmp_path / "mas.json").write_text(json.dumps(mas.to_json()), encoding="utf-8")
    done = agentbalance("export", "--mas", "mas.json", "--catalog", "mine.yaml", "--roles", "math", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    unknown = agentbalance("export", "--mas", "mas.json", cwd=tmp_path)  # the shipped catalog has no my-model
    assert unknown.returncode == 2 and "my-model" in unknown.stderr and "mas.json" in unknown.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--format", "crewai"), "unknown --format 'crewai'"),
        ((), "give either --model RUN_FOLDER"),
        (("--model", "runs/x", "--mas", "mas.json"), "exactly one"),
        (("--model", "runs/x"), "--model needs --query"),
        (("--model", "runs/x", "--query", "q", "--roles", "math"), "--catalog and --roles go with --mas"),
        (("--mas", "mas.json", "--budget-tok", "0.1"), "a --mas is fixed"),
    ],
)
def test_export_says_what_is_wrong_with_its_arguments(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    (tmp_path / "mas.json").write_text(json.dumps(cascade().to_json()), encoding="utf-8")
    done = agentbalance("export", *args, cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr, done.stderr
