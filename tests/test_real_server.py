"""The live world against real llama.cpp servers with real small models (SmolLM2-135M-Instruct, Gemma 3 270M):
run, the response cache, max_tokens, context_tokens, a server stopped mid-run, record, build, the scripts exported
for AutoGen, Microsoft Agent Framework and LangGraph, and the AutoGen adapter.

Run with `make test-real` (a separate pytest invocation after the main suite, see docs/real-servers.md).
Answers of 135M-parameter models are mostly wrong: these tests assert what a user relies on (bounded,
accounted, cached, recorded calls), never accuracy.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.worlds.base import AgentCall
from agentbalance.worlds.live import LiveWorld
from agentbalance.worlds.replay import ReplayWorld
from tests.conftest import REPO
from tests.fakes import two_agent_chain
from tests.real_servers import RealServer, gemma3_path, local_catalog, running, smollm2_path

pytestmark = pytest.mark.real_server

GSM8K = REPO / "tests" / "data" / "gsm8k-test-50" / "test.jsonl"
KEY = "not-needed-by-llama-cpp"  # the live world wants a key; llama.cpp's server ignores it
ROLES = RoleSet.load("math")


def invoke(*args: str, cache: Path) -> dict[str, object] | list[dict[str, object]] | str:
    """The CLI in this process; the parsed JSON of --json output (a list for JSONL), else the text."""
    from agentbalance.cli import app

    env = {"AGENTBALANCE_API_KEY": KEY, "COLUMNS": "120", "AGENTBALANCE_CACHE_DIR": str(cache)}
    result = CliRunner().invoke(app, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"an exception escaped the CLI: {result.exception!r}") from result.exception
    assert result.exit_code == 0, f"exit {result.exit_code}:\n{result.stdout}\n{result.stderr}"
    if "--json" not in args:
        return result.stdout
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return lines if len(lines) > 1 or "run" in args else lines[0]


# ----------------------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llama-logs")


@pytest.fixture(scope="module")
def smollm2(logs: Path) -> Iterator[RealServer]:
    with running(RealServer(smollm2_path(), "smollm2", threads=2), logs) as server:  # it serves most calls
        yield server


@pytest.fixture(scope="module")
def gemma3(logs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    model = gemma3_path(tmp_path_factory.mktemp("gemma3"))
    with running(RealServer(model, "gemma3", chat_format="gemma"), logs) as server:
        yield server


def write_mas(folder: Path, mas: MAS) -> Path:
    path = folder / "mas.json"
    path.write_text(json.dumps(mas.to_json()))
    return path


# ----------------------------------------------------------------------------- run, cache, limits


def test_run_answers_with_real_usage_and_a_rerun_is_served_from_the_cache(smollm2: RealServer, tmp_path: Path) -> None:
    catalog = local_catalog(tmp_path, smollm2)
    args = [
        "run",
        "--world",
        "live",
        "--catalog",
        str(catalog),
        "--mas",
        str(write_mas(tmp_path, two_agent_chain("smollm2-135m", "smollm2-135m"))),
    ]
    args += ["--task", "gsm8k", "--data", str(GSM8K), "--limit", "3", "--cache-dir", str(tmp_path / "cache"), "--json"]
    before = smollm2.requests()
    first = invoke(*args, cache=tmp_path)
    assert isinstance(first, list) and len(first) == 3
    assert smollm2.requests() - before == 6  # 3 queries x 2 agents, one request each
    prices = Catalog.load(catalog)["smollm2-135m"]
    for trace in first:
        for agent in trace["agents"]:  # type: ignore[index, union-attr]
            assert agent["error"] is None and agent["prompt_tokens"] > 20  # the server's count of a real prompt
            assert 0 < agent["completion_tokens"] <= 24  # the catalog's max_tokens, enforced by the server
            assert agent["cost_usd"] == pytest.approx(
                prices.call_cost_usd(agent["prompt_tokens"], agent["completion_tokens"])
            )
            assert agent["latency_s"] > 0
    again = invoke(*args, cache=tmp_path)
    assert smollm2.requests() - before == 6  # not one new request
    for one, two in zip(first, again, strict=True):
        assert one["agents"] == two["agents"] and one["answer"] == two["answer"]  # type: ignore[index]


def test_max_tokens_bounds_every_completion(smollm2: RealServer, tmp_path: Path) -> None:
    catalog = Catalog.load(local_catalog(tmp_path, smollm2, max_tokens=5))
    world = LiveWorld(catalog, api_key=KEY, use_cache=False)
    query = Query(id="q", question="Explain in detail how to add 17 and 25, step by step.", answer="42", domain="math")
    agent = Agent(id="a", role="Mathematician", backbone="smollm2-135m")
    completion = asyncio.run(world.complete(AgentCall(agent, ROLES["Mathematician"], catalog["smollm2-135m"], query)))
    assert completion.completion_tokens == 5 and not completion.usage_estimated  # cut at the limit, by the server


@pytest.fixture(scope="module")
def small_window(logs: Path) -> Iterator[RealServer]:
    """SmolLM2 with a 512-token context window."""
    with running(RealServer(smollm2_path(), "smollm2-512", context_tokens=512), logs) as server:
        yield server


def test_long_inputs_are_cut_to_the_decision_agents_window_which_the_server_would_refuse(
    smollm2: RealServer, small_window: RealServer, tmp_path: Path
) -> None:
    writer = {"max_tokens": 320}  # two long answers for a decision agent with a 512-token window
    reader = {"model": small_window.alias, "base_url": small_window.base_url, "context_tokens": 512, "max_tokens": 64}
    path = local_catalog(tmp_path, smollm2, **{"smollm2-135m": writer})
    entries = yaml.safe_load(path.read_text())["backbones"]
    entries.append({**entries[0], "name": "smollm2-512", **reader})
    path.write_text(yaml.safe_dump({"backbones": entries}))
    catalog = Catalog.load(path)
    agents = [Agent(id=f"a{k}", role="Mathematician", backbone="smollm2-135m") for k in range(2)]
    mas = MAS(
        agents=[*agents, Agent(id="d", role="Mathematician", backbone="smollm2-512")],
        edges=[("a0", "d"), ("a1", "d")],
        decision="d",
    )
    query = Query(
        id="q-long",
        question="Write out, in full detail, every multiplication from 1 x 1 to 12 x 12.",
        answer="0",
        domain="math",
    )

    world = LiveWorld(catalog, api_key=KEY, cache_dir=tmp_path / "cache")
    (trace,) = Runner(world, ROLES).run_sync([(mas, query)])
    inputs, decision = trace.agents[:2], trace.agents[2]
    assert sum(agent.completion_tokens for agent in inputs) + 64 > 512  # inputs and completion overflow the window
    assert decision.error is None and decision.context_cut is not None and "512 tokens" in decision.context_cut
    assert decision.prompt_tokens + 64 <= 512  # the server's own count of the cut prompt

    uncut = Catalog([*catalog.backbones[:1], catalog["smollm2-512"].model_copy(update={"context_tokens": None})])
    (refused,) = Runner(LiveWorld(uncut, api_key=KEY, cache_dir=tmp_path / "cache"), ROLES).run_sync([(mas, query)])
    assert "HTTP 400" in (refused.agents[2].error or "")  # what the cut prevents


# ----------------------------------------------------------------------------- a server stopped mid-run


def test_a_server_stopped_mid_run_leaves_recorded_failures_and_a_rerun_pays_only_for_them(
    logs: Path, tmp_path: Path
) -> None:
    server = RealServer(smollm2_path(), "smollm2").start(logs)
    catalog = local_catalog(tmp_path, server)
    single = MAS(agents=[Agent(id="d", role="Mathematician", backbone="smollm2-135m")], edges=[], decision="d")
    args = ["run", "--world", "live", "--catalog", str(catalog), "--mas", str(write_mas(tmp_path, single))]
    args += ["--task", "gsm8k", "--data", str(GSM8K), "--limit", "6", "--concurrency", "3", "--timeout", "20"]
    args += ["--cache-dir", str(tmp_path / "cache"), "--json"]

    def stop_after_two_answers() -> None:
        deadline = time.monotonic() + 120
        while server.requests() < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        server.stop()

    stopper = threading.Thread(target=stop_after_two_answers)
    stopper.start()
    try:
        traces = invoke(*args, cache=tmp_path)
    finally:
        stopper.join()
        server.stop()
    assert isinstance(traces, list) and len(traces) == 6  # every query reported, none lost
    answered = [t for t in traces if not t["failures"]]
    failed = [t for t in traces if t["failures"]]
    assert len(answered) >= 2 and failed
    assert all("connection" in t["agents"][0]["error"] for t in failed)  # type: ignore[index]

    restarted = RealServer(server.model, "smollm2", port=server.port).start(logs)  # same endpoint, same cache keys
    try:
        rerun = invoke(*args, cache=tmp_path)
        assert restarted.requests() == len(failed)  # the answered queries came from the cache
    finally:
        restarted.stop()
    assert isinstance(rerun, list) and not any(t["failures"] for t in rerun)


# ----------------------------------------------------------------------------- record, then train offline


@pytest.fixture(scope="module")
def recorded(smollm2: RealServer, gemma3: RealServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("recorded")
    catalog = local_catalog(folder, smollm2, gemma3, max_tokens=16)
    out = folder / "world"
    text = invoke(
        "record", "--world", "live", "--task", "gsm8k", "--data", str(GSM8K), "--limit", "16",
        "--catalog", str(catalog), "--out", str(out), "--cache-dir", str(folder / "cache"), "--concurrency", "4",
        cache=folder,
    )  # fmt: skip
    said = " ".join(str(text).split())
    assert "recorded 16 questions x 2 backbones" in said and "32 calls" in said, said
    assert "0 failed" in said, said
    return out


def test_record_writes_a_replay_world_of_both_real_models_with_service_latencies(recorded: Path) -> None:
    outcomes = pd.read_csv(recorded / "outcomes.csv.gz", keep_default_na=False)
    assert sorted(outcomes["model"].unique()) == ["gemma3-270m", "smollm2-135m"] and len(outcomes) == 32
    assert (outcomes["latency_s"] > 0).all() and (outcomes["completion_tokens"] <= 16).all()
    models = yaml.safe_load((recorded / "models.yaml").read_text())["backbones"]
    assert {m["name"]: m["max_tokens"] for m in models} == {"smollm2-135m": 16, "gemma3-270m": 16}
    world = ReplayWorld.load(recorded)
    assert len(world.queries("train")) + len(world.queries("val")) + len(world.queries("test")) == 16


def test_build_and_curve_run_offline_on_the_recorded_world(recorded: Path, tmp_path: Path) -> None:
    result = invoke(
        "build", "--world", f"replay:{recorded}", "--budget-tok", "0.001", "--epochs", "2",
        "--out", str(tmp_path / "run"), "--json", cache=tmp_path,
    )  # fmt: skip
    assert isinstance(result, dict) and result["split"] == "test" and 0 <= result["perf"] <= 1  # type: ignore[operator]
    invoke(
        "curve", "--world", f"replay:{recorded}", "--methods", "agentbalance,single", "--points", "2",
        "--epochs", "1", "--out", str(tmp_path / "curve"), cache=tmp_path,
    )  # fmt: skip
    summary = pd.read_csv(tmp_path / "curve" / "summary.csv")
    assert {"agentbalance", "single"} <= set(summary["method"])


# ----------------------------------------------------------------------------- build live, AutoGen


@pytest.fixture(scope="module")
def live_run(
    smollm2: RealServer, gemma3: RealServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, object]]:
    """`build --world live` at small scale: 6 training, 3 validation and 3 test questions, 1 epoch, 8-token
    answers (the anchored start measures every template on 9 questions: about 250 real calls)."""
    folder = tmp_path_factory.mktemp("live-build")
    catalog = local_catalog(folder, smollm2, gemma3, max_tokens=8)
    result = invoke(
        "build", "--world", "live", "--catalog", str(catalog), "--task", "gsm8k", "--data", str(GSM8K),
        "--train", "6", "--val", "3", "--test", "3", "--epochs", "1", "--budget-tok", "0.001",
        "--cache-dir", str(folder / "cache"), "--concurrency", "2", "--out", str(folder / "run"), "--json",
        cache=folder,
    )  # fmt: skip
    assert isinstance(result, dict)
    return folder / "run", result


def test_build_in_the_live_world_trains_and_saves_a_controller(live_run: tuple[Path, dict[str, object]]) -> None:
    folder, result = live_run
    assert (folder / "config.json").exists() and (folder / "controller.pt").exists()
    assert result["split"] == "test" and result["n"] == 3 and 0 <= result["perf"] <= 1  # type: ignore[operator]


SCRIPT_FRAMEWORKS = {  # export format -> (the module its script imports, the extra that installs it)
    "autogen": ("autogen_ext.models.openai", "autogen"),
    "agent-framework": ("agent_framework.openai", "agent-framework"),
    "langgraph": ("langgraph.graph", "langgraph"),
}


@pytest.mark.parametrize("form", list(SCRIPT_FRAMEWORKS))
def test_each_exported_framework_script_runs_against_the_real_server(
    form: str, live_run: tuple[Path, dict[str, object]], smollm2: RealServer, gemma3: RealServer, tmp_path: Path
) -> None:
    module, extra = SCRIPT_FRAMEWORKS[form]
    pytest.importorskip(module, reason=f'{form} is an optional extra: "agentbalance[{extra}]"')
    script = invoke(
        "export", "--model", str(live_run[0]), "--query", "What is 2 + 3?", "--format", form, cache=tmp_path
    )
    path = tmp_path / "mas_script.py"
    path.write_text(str(script))
    env = {**os.environ, "AGENTBALANCE_API_KEY": KEY}
    before = smollm2.requests() + gemma3.requests()
    done = subprocess.run(
        [sys.executable, str(path), "What is 2 + 3?"], capture_output=True, text=True, env=env, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()  # the decision agent's real answer
    assert smollm2.requests() + gemma3.requests() > before  # it was the real servers that answered


def test_the_autogen_adapter_runs_a_mas_over_openai_clients_of_the_real_server(
    smollm2: RealServer, tmp_path: Path
) -> None:
    pytest.importorskip("autogen_ext.models.openai", reason='AutoGen is an optional extra: "agentbalance[autogen]"')
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    from agentbalance.adapters.autogen import GraphFlowRunner

    catalog = Catalog.load(local_catalog(tmp_path, smollm2))
    info = {
        "vision": False,
        "function_calling": False,
        "json_output": False,
        "family": "unknown",
        "structured_output": False,
    }
    client = OpenAIChatCompletionClient(
        model=smollm2.alias, base_url=smollm2.base_url, api_key=KEY, model_info=info, max_tokens=24
    )  # type: ignore[arg-type]
    runner = GraphFlowRunner(ROLES, clients={"smollm2-135m": client}, catalog=catalog)
    before = smollm2.requests()
    run = asyncio.run(runner.run(two_agent_chain("smollm2-135m", "smollm2-135m"), "What is 12 + 7?"))
    assert smollm2.requests() - before == 2
    assert all(agent.error is None and agent.completion_tokens > 0 for agent in run.trace.agents)
    assert run.trace.cost_usd == pytest.approx(sum(a.cost_usd for a in run.trace.agents)) and run.trace.cost_usd > 0


def real_chat_client(framework: str, server: RealServer) -> object:
    """The framework's own OpenAI-compatible chat client for the server (skipped when its extra is missing)."""
    if framework == "agent-framework":
        pytest.importorskip("agent_framework.openai", reason='an optional extra: "agentbalance[agent-framework]"')
        from agent_framework.openai import OpenAIChatCompletionClient

        return OpenAIChatCompletionClient(model=server.alias, base_url=server.base_url, api_key=KEY)
    pytest.importorskip("langchain_openai", reason='an optional extra: "agentbalance[langgraph,clients]"')
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=server.alias, base_url=server.base_url, api_key=KEY)  # type: ignore[arg-type]


@pytest.mark.parametrize("framework", ["agent-framework", "langgraph"])
def test_the_agent_framework_and_langgraph_adapters_run_a_mas_over_their_clients_of_the_real_server(
    framework: str, smollm2: RealServer, tmp_path: Path
) -> None:
    client = real_chat_client(framework, smollm2)
    if framework == "agent-framework":
        from agentbalance.adapters.agent_framework import WorkflowRunner as Runs
    else:
        from agentbalance.adapters.langgraph import StateGraphRunner as Runs  # type: ignore[assignment]
    catalog = Catalog.load(local_catalog(tmp_path, smollm2, max_tokens=16))
    runner = Runs(ROLES, clients={"smollm2-135m": client}, catalog=catalog)  # type: ignore[dict-item]
    before = smollm2.requests()
    run = asyncio.run(runner.run(two_agent_chain("smollm2-135m", "smollm2-135m"), "What is 12 + 7?"))
    assert smollm2.requests() - before == 2
    for agent in run.trace.agents:  # real usage, bounded by the catalog's max_tokens, priced
        assert agent.error is None and 0 < agent.completion_tokens <= 16 and agent.prompt_tokens > 0
    assert run.trace.cost_usd == pytest.approx(sum(a.cost_usd for a in run.trace.agents)) and run.trace.cost_usd > 0


# ----------------------------------------------------------------------------- serve in front of the real server


def test_serve_answers_the_openai_client_and_autogen_with_a_mas_run_on_the_real_server(
    live_run: tuple[Path, dict[str, object]], smollm2: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agentbalance serve` of the controller trained live, in front of the live world of the real servers."""
    import openai

    from agentbalance.serve import ServedModel, ServerThread, create_app
    from agentbalance.worlds import LiveOptions, open_world

    folder = live_run[0]
    catalog = Catalog.load(folder.parent / "local-catalog.yaml")
    options = LiveOptions(cache_dir=folder.parent / "serve-cache", api_key_file=None)
    monkeypatch.setenv("AGENTBALANCE_API_KEY", KEY)
    world = open_world("live", catalog, live=options)
    before = smollm2.requests()
    with ServerThread(create_app(ServedModel.load(folder, world))) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        reply = client.chat.completions.create(
            model="agentbalance", messages=[{"role": "user", "content": "What is 12 + 7?"}]
        )
        about = reply.model_extra["agentbalance"]  # type: ignore[index]
        assert reply.choices[0].message.content and reply.usage is not None and reply.usage.prompt_tokens > 0
        assert about["mas"]["agents"] and about["cost_usd"] > 0 and about["latency_s"] > 0

        pytest.importorskip("autogen_ext.models.openai", reason='AutoGen is an optional extra: "agentbalance[autogen]"')
        from autogen_core.models import ModelFamily, ModelInfo, UserMessage
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        info = ModelInfo(
            vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
        )
        model_client = OpenAIChatCompletionClient(model="agentbalance", base_url=url, api_key="unused", model_info=info)

        async def create() -> object:
            try:
                return await model_client.create([UserMessage(content="What is 30 - 4?", source="user")])
            finally:
                await model_client.close()

        result = asyncio.run(create())
        assert result.content and result.usage.completion_tokens > 0  # type: ignore[attr-defined]
    assert smollm2.requests() > before  # the agents' calls reached the real server


def test_serve_streams_a_conversation_and_a_client_that_leaves_starts_no_call_on_the_real_server(
    live_run: tuple[Path, dict[str, object]], smollm2: RealServer, gemma3: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system message and three turns, streamed, from the real server's models; then the same conversation from a
    client that hangs up at once: the real servers' logs show no call started after the hang-up (at most the
    calls already in flight, which the server closed, finish there), fewer than the whole MAS made."""
    import openai

    from agentbalance.serve import ServedModel, ServerThread, create_app
    from agentbalance.worlds import LiveOptions, open_world
    from tests.test_serve_cancellation import send_and_hang_up

    folder = live_run[0]
    catalog = Catalog.load(folder.parent / "local-catalog.yaml")
    monkeypatch.setenv("AGENTBALANCE_API_KEY", KEY)
    world = open_world("live", catalog, live=LiveOptions(use_cache=False, api_key_file=None))
    conversation = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "What is 12 + 7?"},
    ]

    def answered() -> int:
        return smollm2.requests() + gemma3.requests()

    def quiet() -> int:
        """The servers' count once nothing more has been answered for 5 s (a call in flight may still finish)."""
        count, since = answered(), time.monotonic()
        while time.monotonic() - since < 5:
            time.sleep(0.1)
            if answered() != count:
                count, since = answered(), time.monotonic()
        return count

    with ServerThread(create_app(ServedModel.load(folder, world))) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        before = answered()
        plain = client.chat.completions.create(model="agentbalance", messages=conversation)  # type: ignore[arg-type]
        calls = quiet() - before
        with client.chat.completions.create(
            model="agentbalance", messages=conversation, stream=True, stream_options={"include_usage": True}
        ) as stream:  # type: ignore[call-overload]
            chunks = list(stream)
        assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].usage.prompt_tokens > 0
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert streamed and chunks[-1].model_extra["agentbalance"]["cost_usd"] > 0
        ran = [a for a in plain.model_extra["agentbalance"]["agents"] if a["skipped"] is None]  # type: ignore[index]
        assert calls == len(ran) >= 1  # every agent that ran is one call the real servers answered
        before_hang_up = quiet()
        send_and_hang_up(url, {"model": "agentbalance", "messages": conversation}, 0.05)  # the same MAS (no cache)
        started = quiet() - before_hang_up
    mas = plain.model_extra["agentbalance"]["mas"]  # type: ignore[index]
    first_step = [agent for agent in mas["agents"] if not any(edge[1] == agent["id"] for edge in mas["edges"])]
    assert started <= len(first_step) and (started < calls or calls == 1)


def test_the_judge_grades_with_a_real_model_on_the_real_server(smollm2: RealServer, tmp_path: Path) -> None:
    """Plumbing only (a 135M-parameter judge's verdicts are not meant to be good): one real call at temperature 0
    with the server's usage, a verdict that is a score in [0, 1] or ungraded with its reason, the judge's own cost,
    and a rerun read from the cache."""
    from agentbalance.worlds.judge import Judge

    catalog = Catalog.load(local_catalog(tmp_path, smollm2, max_tokens=48))
    query = Query(id="open", question="How do I keep basil alive indoors?")
    answer = "Give it six hours of sun and water it when the top of the soil is dry."
    before = smollm2.requests()
    judge = Judge(LiveWorld(catalog, api_key=KEY, cache_dir=tmp_path / "cache"), catalog["smollm2-135m"])
    verdict = asyncio.run(judge.grade(query, answer))
    assert smollm2.requests() - before == 1
    assert (verdict.score is None and verdict.error) or (verdict.score is not None and 0 <= verdict.score <= 1)
    assert verdict.text and verdict.cost_usd > 0 and judge.stats.paid_usd == verdict.cost_usd
    again = Judge(LiveWorld(catalog, api_key=KEY, cache_dir=tmp_path / "cache"), catalog["smollm2-135m"])
    repeated = asyncio.run(again.grade(query, answer))
    assert repeated.cached and repeated.score == verdict.score and smollm2.requests() - before == 1


FEW_SHOT_RUBRIC = """\
system: "You grade answers from 1 (wrong) to 10 (perfect)."
prompt: |
  Question: What is 2 + 2?
  Answer: 4
  Rating: [[10]]

  Question: What is 3 + 3?
  Answer: 9
  Rating: [[1]]

  Question: {question}
  Answer: {answer}
  Rating:
"""


def test_served_traffic_is_judged_and_trained_on_with_the_real_server(
    live_run: tuple[Path, dict[str, object]], smollm2: RealServer, gemma3: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop from served traffic to the next controller, on the real servers: `serve --log-dir` keeps five
    requests, `record --task served --judge --ask-missing` grades the served answers without asking them again
    and asks the other backbone, and `build` trains offline on the recorded world."""
    import openai

    from agentbalance.serve import ServedModel, ServeOptions, ServerThread, create_app
    from agentbalance.worlds import LiveOptions, open_world

    folder = live_run[0].parent
    catalog_file = folder / "local-catalog.yaml"
    monkeypatch.setenv("AGENTBALANCE_API_KEY", KEY)
    world = open_world("live", Catalog.load(catalog_file), live=LiveOptions(cache_dir=folder / "loop-cache"))
    options = ServeOptions(log_dir=folder / "traffic")
    with ServerThread(create_app(ServedModel.load(live_run[0], world), options)) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        for question in ["What is 12 + 7?", "What is 9 * 3?", "What is 40 - 8?", "What is 6 + 6?", "What is 2 * 8?"]:
            client.chat.completions.create(model="agentbalance", messages=[{"role": "user", "content": question}])
    logged = (folder / "traffic" / "requests.jsonl").read_text().splitlines()
    assert len(logged) == 5

    # a 270M pretrained model follows a few-shot rubric's form (SmolLM2-135M rates nothing under any rubric tried);
    # its ratings are plumbing, not judgement
    rubric = folder / "few-shot-rubric.yaml"
    rubric.write_text(FEW_SHOT_RUBRIC, encoding="utf-8")
    before = smollm2.requests() + gemma3.requests()
    recorded = invoke(
        "record", "--world", "live", "--catalog", str(catalog_file), "--task", "served", "--data",
        str(folder / "traffic"), "--judge", "gemma3-270m", "--judge-rubric", str(rubric), "--ask-missing",
        "--cache-dir", str(folder / "loop-cache"), "--out", str(folder / "served-world"), cache=folder,
    )  # fmt: skip
    assert isinstance(recorded, str) and "answers reused from the served log" in recorded and "judge: " in recorded
    replayed = ReplayWorld.load(folder / "served-world")
    assert len(replayed.questions) == 5 and set(replayed.catalog.names) == {"smollm2-135m", "gemma3-270m"}
    reused = int(recorded.split(" answers reused")[0].split()[-1])
    assert 0 < reused <= 10 and smollm2.requests() + gemma3.requests() - before >= 10 - reused  # the rest asked
    scores = pd.read_csv(folder / "served-world" / "outcomes.csv.gz", keep_default_na=False, dtype=str)["score"]
    ungraded = int((scores == "").sum())
    assert all(0 <= float(v) <= 1 for v in scores if v), "a rating read from the verdict, on [0, 1]"
    assert ungraded == 0 or f"{ungraded} of 10 answers could not be graded" in " ".join(recorded.split())

    # the next controller, trained offline on the graded traffic; or, where this tiny judge rated none of a
    # backbone's training answers, refused before training with that reason
    from agentbalance.cli import app

    def has_a_graded_training_answer(backbone: str) -> bool:
        try:
            return replayed.accuracy(backbone, "train") >= 0
        except AgentBalanceError:
            return False

    rated = all(has_a_graded_training_answer(name) for name in replayed.catalog.names)
    result = CliRunner().invoke(
        app,
        ["build", "--world", f"replay:{folder / 'served-world'}", "--budget-tok", "0.001", "--epochs", "1",
         "--train", "3", "--val", "2", "--test", "2", "--out", str(folder / "next"), "--json"],
        env={"AGENTBALANCE_CACHE_DIR": str(folder)},
    )  # fmt: skip
    if rated:
        assert result.exit_code == 0, result.stderr
        built = json.loads(result.stdout.splitlines()[-1])
        assert built["n"] >= 1 and 0 <= built["perf"] <= 1
    else:
        assert result.exit_code == 2 and "is graded (its `score` cells are empty" in result.stderr
