"""Live calls are bounded: a completion-token limit on every request, prompts cut to the context window,
and per-backbone concurrency so recorded latencies are service times (issue #20 items 1-2)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentbalance.catalog import DEFAULT_MAX_TOKENS, DEFAULT_REASONING_MAX_TOKENS, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.worlds.base import AgentCall, AgentCallFailed
from agentbalance.worlds.cache import CachedResponse, ResponseCache, cache_key
from agentbalance.worlds.live import CACHE_FILE, LiveWorld
from agentbalance.worlds.recording import record
from tests.fakes import ArithmeticTask, two_agent_chain
from tests.loopback_server import Fault, LoopbackServer

KEY = "sk-loopback-limits-0123456789"
ROLES = RoleSet.load("math")
QUERY = Query(id="q1", question="What is 2 + 2?", answer="4", domain="math")
LONG_ANSWER = "I add the numbers carefully. " * 400 + "So the result is \\boxed{4}."


def catalog(folder: Path, **overrides: dict[str, Any]) -> Catalog:
    """tiny, think (reasoning) and small (a 1,024-token window); `overrides` per backbone name."""
    entries = [
        {"name": "tiny", "model": "tiny-model"},
        {"name": "think", "model": "think-model", "reasoning": True},
        {"name": "small", "model": "small-model", "context_tokens": 1024, "max_tokens": 128},
    ]
    backbones = []
    for entry in entries:
        backbone = {"family": "test", "reasoning": False, "params_active_b": 8, "price_in": 1.0, "price_out": 2.0}
        backbones.append({**backbone, **entry, "scores": {"math": 70}, **overrides.get(entry["name"], {})})
    path = folder / "catalog.yaml"
    path.write_text(yaml.safe_dump({"backbones": backbones}))
    return Catalog.load(path)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    def responder(body: dict[str, Any]) -> str:  # tiny rambles; the others answer briefly
        return LONG_ANSWER if body["model"] == "tiny-model" else "So the result is \\boxed{4}."

    with LoopbackServer(responder=responder) as running:
        yield running


def live(server: LoopbackServer, folder: Path, **options: Any) -> LiveWorld:
    options = {"catalog": catalog(folder), "cache_dir": folder / "cache", "max_retries": 0, **options}
    return LiveWorld(base_url=server.base_url, api_key=KEY, timeout_s=5.0, **options)


def ask(world: LiveWorld, backbone: str) -> None:
    call = AgentCall(
        Agent(id="a", role="Mathematician", backbone=backbone), ROLES["Mathematician"], world.catalog[backbone], QUERY
    )
    asyncio.run(world.complete(call))


# ----------------------------------------------------------------------------- the completion-token limit


def test_every_call_carries_a_completion_limit(server: LoopbackServer, tmp_path: Path) -> None:
    world = live(server, tmp_path)
    for name in ("tiny", "think", "small"):
        ask(world, name)
    sent = {request.model: request.body for request in server.requests}
    assert sent["tiny-model"]["max_tokens"] == DEFAULT_MAX_TOKENS  # type: ignore[index]
    assert sent["think-model"]["max_tokens"] == DEFAULT_REASONING_MAX_TOKENS  # type: ignore[index]
    assert sent["small-model"]["max_tokens"] == 128  # type: ignore[index]  # the catalog's own


def test_the_worlds_limit_applies_where_the_catalog_sets_none_and_a_default_leaves_the_prompt_room(
    server: LoopbackServer, tmp_path: Path
) -> None:
    windowed = catalog(tmp_path, small={"max_tokens": None, "context_tokens": 1000})
    world = live(server, tmp_path, catalog=windowed, max_tokens=700)
    assert world.completion_limit(windowed["tiny"]) == 700
    assert world.completion_limit(windowed["small"]) == 500  # half the window, not the world's 700


def test_the_limit_goes_in_the_parameter_the_endpoint_takes(server: LoopbackServer, tmp_path: Path) -> None:
    world = live(server, tmp_path, catalog=catalog(tmp_path, tiny={"max_tokens_parameter": "max_completion_tokens"}))
    ask(world, "tiny")
    (request,) = server.requests
    assert request.body["max_completion_tokens"] == DEFAULT_MAX_TOKENS and "max_tokens" not in request.body  # type: ignore[index, operator]


def test_an_endpoint_that_rejects_the_limits_name_is_a_user_error_that_names_the_fix(
    server: LoopbackServer, tmp_path: Path
) -> None:
    message = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    )
    server.always("tiny-model", Fault(status=400, message=message))
    with pytest.raises(AgentBalanceError, match="max_tokens_parameter: max_completion_tokens"):
        ask(live(server, tmp_path), "tiny")


def test_a_catalog_whose_limit_fills_the_window_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match=r"small.*max_tokens \(2048\) must be below context_tokens \(2048\)"):
        catalog(tmp_path, small={"max_tokens": 2048, "context_tokens": 2048})


def test_a_response_cached_before_limits_still_answers_when_it_stopped_short_of_the_limit(
    server: LoopbackServer, tmp_path: Path
) -> None:
    world = live(server, tmp_path)
    agent = Agent(id="a", role="Mathematician", backbone="tiny")
    messages = AgentCall(agent, ROLES["Mathematician"], world.catalog["tiny"], QUERY).messages
    old_key = cache_key(world.endpoint(world.catalog["tiny"]).base_url, "tiny-model", messages, {"temperature": 0.0})
    cache = ResponseCache(tmp_path / "cache" / CACHE_FILE)
    cache.put(old_key, CachedResponse("so \\boxed{7}", 20, 12, 0, 0.5))
    ask(world, "tiny")
    assert not server.requests and world.stats.cache_hits == 1

    cache.put(old_key, CachedResponse("so \\boxed{7}", 20, DEFAULT_MAX_TOKENS, 0, 0.5))  # it may have been cut
    ask(live(server, tmp_path), "tiny")
    assert len(server.requests) == 1


# ----------------------------------------------------------------------------- the context window


def test_a_long_upstream_answer_is_cut_to_fit_the_window_and_the_trace_says_so(
    server: LoopbackServer, tmp_path: Path
) -> None:
    world = live(server, tmp_path)
    (trace,) = Runner(world, ROLES).run_sync([(two_agent_chain("tiny", "small"), QUERY)])
    decision = next(agent for agent in trace.agents if agent.id == "d")
    assert decision.error is None and trace.answer == "4"
    assert decision.context_cut is not None and "small's context window of 1024 tokens" in decision.context_cut
    request = server.requests_for("small-model")[0]
    prompt = request.body["messages"][-1]["content"]  # type: ignore[index]
    assert request.response["usage"]["prompt_tokens"] + 128 <= 1024  # type: ignore[index]  # the server's own count
    assert "tokens of this message were cut" in prompt and prompt.rstrip().endswith("\\boxed{4}.")  # the tail is kept
    assert "What is 2 + 2?" in prompt  # the question is never cut
    assert json.loads(json.dumps(trace.to_json()))["agents"][1]["context_cut"] == decision.context_cut


def test_inputs_that_fit_are_sent_whole(server: LoopbackServer, tmp_path: Path) -> None:
    world = live(server, tmp_path)
    (trace,) = Runner(world, ROLES).run_sync([(two_agent_chain("think", "small"), QUERY)])
    assert all(agent.context_cut is None for agent in trace.agents)
    assert "were cut" not in server.requests_for("small-model")[0].body["messages"][-1]["content"]  # type: ignore[index]


def test_a_question_that_cannot_fit_fails_that_agent_with_a_reason_and_sends_nothing(
    server: LoopbackServer, tmp_path: Path
) -> None:
    world = live(server, tmp_path, catalog=catalog(tmp_path, small={"context_tokens": 200, "max_tokens": 100}))
    huge = Query(id="q-huge", question="Add these: " + "1 + " * 300 + "1", answer="301", domain="math")
    agent = Agent(id="d", role="Mathematician", backbone="small")
    with pytest.raises(AgentCallFailed, match=r"^the prompt .* and max_tokens 100 do not fit small's context"):
        asyncio.run(world.complete(AgentCall(agent, ROLES["Mathematician"], world.catalog["small"], huge)))
    assert not server.requests and world.stats.failures == 1
    (trace,) = Runner(world, ROLES).run_sync([(MAS(agents=[agent], edges=[], decision="d"), huge)])
    assert trace.answer is None and "do not fit" in (trace.agents[0].error or "") and not server.requests


# ----------------------------------------------------------------------------- concurrency and latency


def test_record_sends_one_call_at_a_time_per_backbone_by_default(tmp_path: Path) -> None:
    task = ArithmeticTask(
        tuple(Query(id=f"q{i}", question=f"What is {i} + 1?", answer=str(i + 1), domain="math") for i in range(6))
    )
    one = catalog(tmp_path, small={"max_tokens": None})
    one = Catalog([one["tiny"]], source=one.source)
    with LoopbackServer() as slow:
        slow.always("tiny-model", Fault(kind="slow", delay_s=0.05))
        world = LiveWorld(one, base_url=slow.base_url, api_key=KEY, cache_dir=tmp_path / "c1", concurrency=16)
        asyncio.run(record(world, task, tmp_path / "out1", concurrency=16))
        assert slow.max_in_flight == 1 and len(slow.requests) == 6
    with LoopbackServer() as slow:
        slow.always("tiny-model", Fault(kind="slow", delay_s=0.05))
        world = LiveWorld(one, base_url=slow.base_url, api_key=KEY, cache_dir=tmp_path / "c2", concurrency=16)
        asyncio.run(record(world, task, tmp_path / "out2", concurrency=16, concurrency_per_backbone=None))
        assert slow.max_in_flight > 1  # without the limit the server queues our own calls


def test_the_live_worlds_per_backbone_limit_bounds_each_backbone_apart(server: LoopbackServer, tmp_path: Path) -> None:
    server.always("think-model", Fault(kind="slow", delay_s=0.05))
    world = live(server, tmp_path, concurrency_per_backbone=1, use_cache=False)
    mas = MAS(agents=[Agent(id="d", role="Mathematician", backbone="think")], edges=[], decision="d")
    queries = [Query(id=f"q{i}", question=f"What is {i} + 2?", answer=str(i + 2), domain="math") for i in range(5)]
    Runner(world, ROLES, concurrency=8).run_sync([(mas, query) for query in queries])
    assert server.max_in_flight == 1 and len(server.requests) == 5
