"""The live world against a real OpenAI-compatible HTTP server on 127.0.0.1: usage, retries, cache, keys, record."""

from __future__ import annotations

import asyncio
import email.utils
import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import yaml

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.worlds import open_world
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion, estimate_prompt_tokens
from agentbalance.worlds.cache import CachedResponse, ResponseCache, cache_key
from agentbalance.worlds.chat_responses import retry_after_s
from agentbalance.worlds.live import LiveCompletion, LiveWorld
from agentbalance.worlds.recording import SOLVER, record
from agentbalance.worlds.replay import ReplayWorld
from tests.fakes import ArithmeticTask
from tests.loopback_server import Fault, LoopbackServer, unused_port

KEY = "sk-loopback-SECRET-0123456789"
PACKAGE = Path(__file__).resolve().parent.parent / "agentbalance"
ROLES = RoleSet.load("math")
QUERY = Query(id="q1", question="What is 2 + 2?", answer="4", domain="math")
BACKBONES = [
    {"name": "tiny", "model": "tiny-model", "price_in": 0.5, "price_out": 1.5},
    {"name": "think", "model": "think-model", "reasoning": True, "price_in": 1.0, "price_out": 4.0},
    {"name": "mid", "model": "mid-model", "price_in": 0.7, "price_out": 2.8},
]


def write_catalog(folder: Path, *extra: dict[str, object], think_request: dict[str, object] | None = None) -> Catalog:
    """A 3-backbone catalog (plus `extra` entries) in a YAML file, loaded like a user's."""
    entries = []
    for raw in [*BACKBONES, *extra]:
        entry = {"family": "test", "reasoning": False, "params_active_b": 8, "scores": {"math": 70}, **raw}
        if entry["name"] == "think":
            entry["request"] = think_request if think_request is not None else {"enable_thinking": True}
        entries.append(entry)
    path = folder / "catalog.yaml"
    path.write_text(yaml.safe_dump({"backbones": entries}))
    return Catalog.load(path)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(api_keys={KEY}) as running:
        yield running


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return write_catalog(tmp_path)


def live(catalog: Catalog, server: LoopbackServer, cache_dir: Path, **kwargs: object) -> LiveWorld:
    """A live world with test-sized timeouts and backoff (base 10 ms)."""
    options: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": KEY,
        "timeout_s": 2.0,
        "max_retries": 3,
        "cache_dir": cache_dir,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        **kwargs,
    }
    return LiveWorld(catalog, **options)  # type: ignore[arg-type]


def single_call(world: LiveWorld, backbone: str, query: Query = QUERY, role: str = "Mathematician") -> AgentCall:
    agent = Agent(id="a0", role=role, backbone=backbone)
    return AgentCall(agent, ROLES[role], world.catalog[backbone], query)


def complete(world: LiveWorld, backbone: str, query: Query = QUERY) -> Completion:
    return asyncio.run(world.complete(single_call(world, backbone, query)))


def three_agent_mas() -> MAS:
    agents = [
        Agent(id="a0", role="Mathematician", backbone="tiny"),
        Agent(id="a1", role="Algebra Specialist", backbone="think"),
        Agent(id="d", role="Decision Maker", backbone="mid"),
    ]
    return MAS(agents, [("a0", "d"), ("a1", "d")], "d")


# ----------------------------------------------------------------------------- usage, cost, the request


def test_usage_cost_and_reasoning_tokens_are_the_responses_and_extras_reach_the_body(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.reasoning_tokens["think-model"] = 120
    world = live(catalog, server, tmp_path)
    completion = complete(world, "think")

    (sent,) = server.requests
    usage = sent.response["usage"]  # type: ignore[index]
    assert isinstance(completion, LiveCompletion) and not completion.usage_estimated and not completion.cached
    assert completion.prompt_tokens == usage["prompt_tokens"]
    assert completion.completion_tokens == usage["completion_tokens"]
    assert completion.reasoning_tokens == 120
    expected_cost = (1.0 * usage["prompt_tokens"] + 4.0 * usage["completion_tokens"]) / 1e6
    assert completion.cost_usd == pytest.approx(expected_cost, rel=1e-12)
    assert completion.cost_usd == catalog["think"].call_cost_usd(usage["prompt_tokens"], usage["completion_tokens"])
    assert 0 < completion.latency_s < 2.0  # measured, not modelled
    assert completion.answer == "4"  # the default parse reads the boxed answer
    assert completion.correct is None  # a live world does not know the truth; the runner's grader does

    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "think-model"  # type: ignore[index]
    assert sent.body["temperature"] == 0  # type: ignore[index]
    assert sent.body["enable_thinking"] is True  # type: ignore[index]  # a non-standard key, via extra_body
    assert "stream" not in sent.body or sent.body["stream"] is False  # type: ignore[operator,index]
    assert sent.body["messages"] == single_call(world, "think").messages  # type: ignore[index]
    assert world.stats.calls == 1 and world.stats.requests == 1 and world.stats.retries == 0


def test_standard_request_keys_are_sent_and_a_null_drops_the_default_temperature(
    server: LoopbackServer, tmp_path: Path
) -> None:
    catalog = write_catalog(tmp_path, think_request={"reasoning_effort": "low", "temperature": None, "top_p": 0.5})
    complete(live(catalog, server, tmp_path, max_tokens=256), "think")
    body = server.requests[0].body
    assert body is not None
    assert body["reasoning_effort"] == "low" and body["top_p"] == 0.5 and body["max_tokens"] == 256
    assert "temperature" not in body


def test_a_request_may_not_set_what_the_world_owns(server: LoopbackServer, tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path, think_request={"stream": True})
    with pytest.raises(AgentBalanceError, match=r"backbone 'think': `request` may not set stream"):
        live(catalog, server, tmp_path)


# ----------------------------------------------------------------------------- retries


@pytest.mark.parametrize(
    "fault",
    [
        Fault(status=429),
        Fault(status=500),
        Fault(status=503),
        Fault(kind="drop"),
        Fault(kind="slow", delay_s=1.5),  # beyond the 0.3 s timeout
    ],
    ids=["429", "500", "503", "connection-reset", "timeout"],
)
def test_transient_faults_are_retried_until_an_answer_arrives(
    fault: Fault, server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.fail(fault, times=2)
    world = live(catalog, server, tmp_path, timeout_s=0.3)
    completion = complete(world, "tiny")
    assert completion.answer == "4"
    assert server.count() == 3  # two faults, then the answer
    assert (world.stats.requests, world.stats.retries, world.stats.failures) == (3, 2, 0)
    assert completion.latency_s < 0.3  # the successful attempt's seconds, not the waits before it


def test_retry_after_is_honoured(server: LoopbackServer, catalog: Catalog, tmp_path: Path) -> None:
    server.fail(Fault(status=429, retry_after="1"))
    world = live(catalog, server, tmp_path)
    started = time.perf_counter()
    complete(world, "tiny")
    elapsed = time.perf_counter() - started
    first, second = server.requests
    assert server.count() == 2
    assert second.received_at - first.received_at >= 0.95  # the server asked for 1 s; our own backoff is 10 ms
    assert elapsed >= 0.95


def test_backoff_without_retry_after_is_short_and_jittered(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.fail(Fault(status=429), times=3)
    world = live(catalog, server, tmp_path)
    started = time.perf_counter()
    complete(world, "tiny")
    assert server.count() == 4
    assert time.perf_counter() - started < 0.9  # 3 waits of at most 10, 20, 40 ms: no Retry-After, no long sleeps


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_in_seconds_or_milliseconds(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_s(headers) == seconds


def test_retry_after_as_an_http_date_is_the_seconds_until_then() -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_s({"retry-after": when}) or 0) <= 30


def test_after_max_retries_the_call_fails_with_its_elapsed_seconds(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.always("tiny-model", Fault(status=503))
    world = live(catalog, server, tmp_path, max_retries=2)
    with pytest.raises(AgentCallFailed, match=r"tiny: HTTP 503 after 3 attempt\(s\) \(2 retries\)") as failure:
        complete(world, "tiny")
    assert server.count() == 3
    assert failure.value.latency_s > 0 and failure.value.cost_usd == 0
    assert (world.stats.retries, world.stats.failures) == (2, 1)


def test_a_failed_agent_is_recorded_and_the_mas_answers_from_the_others(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.always("think-model", Fault(status=500))
    world = live(catalog, server, tmp_path, max_retries=2)
    runner = Runner(world, ROLES, grader=lambda query, answer: answer == query.answer)
    (trace,) = runner.run_sync([(three_agent_mas(), QUERY)])

    by_id = {agent.id: agent for agent in trace.agents}
    assert trace.failures == 1 and by_id["a1"].error is not None and "HTTP 500 after 3 attempt(s)" in by_id["a1"].error
    assert trace.answer == "4" and trace.correct is True
    assert len(server.requests_for("think-model")) == 3
    decision_prompt = server.requests_for("mid-model")[0].body["messages"][-1]["content"]  # type: ignore[index]
    assert "[a0 | Mathematician]" in decision_prompt and "[a1 |" not in decision_prompt
    assert trace.cost_usd == pytest.approx(by_id["a0"].cost_usd + by_id["d"].cost_usd)
    assert KEY not in json.dumps(trace.to_json(with_text=True))


# ----------------------------------------------------------------------------- the cache


def test_a_second_identical_run_is_served_from_the_cache_with_the_original_usage(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.reasoning_tokens["think-model"] = 50
    first_world = live(catalog, server, tmp_path)
    (first,) = Runner(first_world, ROLES).run_sync([(three_agent_mas(), QUERY)])
    requests = server.count()
    assert requests == 3 and first_world.stats.cache_hits == 0

    second_world = live(catalog, server, tmp_path)  # a new process would see the same file
    (second,) = Runner(second_world, ROLES).run_sync([(three_agent_mas(), QUERY)])
    assert server.count() == requests  # not one new request
    assert second_world.stats.cache_hits == 3 and second_world.stats.requests == 0
    assert second.answer == first.answer
    for a, b in zip(first.agents, second.agents, strict=True):
        assert (a.answer, a.text, a.prompt_tokens, a.completion_tokens, a.reasoning_tokens) == (
            b.answer,
            b.text,
            b.prompt_tokens,
            b.completion_tokens,
            b.reasoning_tokens,
        )
        assert (a.cost_usd, a.latency_s) == (b.cost_usd, b.latency_s)  # original cost and measured latency
    assert second.cost_usd == first.cost_usd and second.latency_s == first.latency_s
    hit = asyncio.run(second_world.complete(single_call(second_world, "tiny")))
    assert hit.cached is True


def test_use_cache_false_calls_the_endpoint_again(server: LoopbackServer, catalog: Catalog, tmp_path: Path) -> None:
    complete(live(catalog, server, tmp_path), "tiny")
    uncached = live(catalog, server, tmp_path, use_cache=False)
    complete(uncached, "tiny")
    complete(uncached, "tiny")
    assert server.count() == 3 and uncached.cache is None and uncached.stats.cache_hits == 0


def test_the_cache_key_holds_no_key_so_another_key_reuses_the_answer(tmp_path: Path) -> None:
    with LoopbackServer(api_keys={KEY, "sk-second-user-key-9876"}) as server:
        catalog = write_catalog(tmp_path)
        complete(live(catalog, server, tmp_path), "tiny")
        complete(live(catalog, server, tmp_path, api_key="sk-second-user-key-9876"), "tiny")
        assert server.count() == 1
    key = cache_key("http://x/v1/", "m", [{"role": "user", "content": "hi"}], {"temperature": 0})
    assert key == cache_key("http://x/v1", "m", [{"role": "user", "content": "hi"}], {"temperature": 0})
    assert key != cache_key("http://x/v1", "m", [{"role": "user", "content": "hi"}], {"temperature": 0.7})


def test_identical_calls_in_flight_together_are_paid_once(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.fail(Fault(kind="slow", delay_s=0.2))
    world = live(catalog, server, tmp_path)

    async def twice() -> list[Completion]:
        return list(await asyncio.gather(*(world.complete(single_call(world, "tiny")) for _ in range(2))))

    first, second = asyncio.run(twice())
    assert server.count() == 1 and world.stats.cache_hits == 1
    assert (first.cached, second.cached) == (False, True) and first.text == second.text


def test_a_torn_row_is_ignored_and_overwritten(server: LoopbackServer, catalog: Catalog, tmp_path: Path) -> None:
    original = complete(live(catalog, server, tmp_path), "tiny")
    path = tmp_path / "responses.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses SET value = substr(value, 1, 25)")  # a torn write: half a JSON value
    world = live(catalog, server, tmp_path)
    again = complete(world, "tiny")
    assert server.count() == 2 and world.cache is not None and world.cache.corrupt_rows == 1
    assert again.text == original.text and not again.cached

    with sqlite3.connect(path) as db:  # a well-formed value that does not match its checksum: tampered
        (value,) = db.execute("SELECT value FROM responses").fetchone()
        forged = json.loads(value) | {"completion_tokens": 1}
        db.execute("UPDATE responses SET value = ?", (json.dumps(forged),))
    assert complete(live(catalog, server, tmp_path), "tiny").completion_tokens == original.completion_tokens
    assert server.count() == 3

    healed = live(catalog, server, tmp_path)
    assert complete(healed, "tiny").cached and server.count() == 3 and healed.stats.cache_hits == 1


def test_an_unreadable_cache_file_is_moved_aside_not_fatal(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    (tmp_path / "responses.sqlite").write_bytes(b"this is not a sqlite database" * 100)
    assert complete(live(catalog, server, tmp_path), "tiny").answer == "4"
    assert list(tmp_path.glob("responses.sqlite.corrupt-*"))


def test_the_cache_is_safe_for_concurrent_threads_and_processes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    shared = ResponseCache(path)
    writer = (  # a bare writer process: stub packages skip agentbalance's imports, the cache module is the real one
        "import sys, types\n"
        f"root = {str(PACKAGE)!r}\n"
        "for name, folder in (('agentbalance', root), ('agentbalance.worlds', root + '/worlds')):\n"
        "    sys.modules[name] = types.ModuleType(name); sys.modules[name].__path__ = [folder]\n"
        "from agentbalance.worlds.cache import CachedResponse, ResponseCache\n"
        "cache = ResponseCache(sys.argv[1])\n"
        "for i in range(40):\n"
        "    cache.put(f'{sys.argv[2]}-{i}', CachedResponse('x' * i, i, 2 * i, 0, 0.1))\n"
    )
    processes = [subprocess.Popen([sys.executable, "-c", writer, str(path), f"p{n}"]) for n in range(3)]

    def put_many(thread: int) -> None:
        for i in range(40):
            shared.put(f"t{thread}-{i}", CachedResponse("y" * i, i, i, i, 0.2))

    threads = [threading.Thread(target=put_many, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [process.wait(timeout=60) for process in processes] == [0, 0, 0]

    reader = ResponseCache(path)
    assert len(reader) == 240 and reader.corrupt_rows == 0
    assert reader.get("p2-39") == CachedResponse("x" * 39, 39, 78, 0, 0.1)
    assert reader.get("t1-7") == CachedResponse("y" * 7, 7, 7, 7, 0.2)
    assert reader.get("missing") is None


# ----------------------------------------------------------------------------- keys and user errors


def test_keys_never_reach_the_cache_file_errors_or_traces(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    world = live(catalog, server, tmp_path)
    (trace,) = Runner(world, ROLES).run_sync([(three_agent_mas(), QUERY)])
    assert KEY not in json.dumps(trace.to_json(with_text=True))
    assert KEY not in repr(world) and KEY not in repr(world.endpoint(catalog["tiny"]))
    cache_bytes = b"".join(p.read_bytes() for p in tmp_path.glob("responses.sqlite*"))
    assert cache_bytes and KEY.encode() not in cache_bytes
    assert b"authorization" not in cache_bytes.lower()


def test_a_rejected_key_is_one_clear_user_error_that_never_repeats_the_key(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    wrong = "sk-wrong-key-ABCDEF-987654"
    world = live(catalog, server, tmp_path, api_key=wrong)
    with pytest.raises(AgentBalanceError) as error:
        complete(world, "tiny")
    message = str(error.value)
    assert "rejected the API key (HTTP 401)" in message and "the api_key argument" in message
    assert wrong not in message and "ABCDEF" not in message and "\n" not in message
    assert error.value.__cause__ is None and error.value.__context__ is None  # no SDK error (quoting the key) chained
    assert wrong in json.dumps(server.requests[0].response)  # the server did echo it, like real APIs
    assert server.count() == 1  # never retried


def test_an_unknown_model_is_a_user_error(tmp_path: Path) -> None:
    with LoopbackServer(api_keys={KEY}, models={"tiny-model", "mid-model", "think-model"}) as server:
        catalog = write_catalog(tmp_path, {"name": "ghost", "model": "no-such-model", "price_in": 1, "price_out": 1})
        with pytest.raises(AgentBalanceError, match=r"does not know model 'no-such-model' \(HTTP 404\)"):
            complete(live(catalog, server, tmp_path), "ghost")
        assert server.count() == 1


def test_an_unreachable_endpoint_is_a_user_error_after_the_retries(catalog: Catalog, tmp_path: Path) -> None:
    world = LiveWorld(
        catalog,
        base_url=f"http://127.0.0.1:{unused_port()}/v1",
        api_key=KEY,
        max_retries=2,
        cache_dir=tmp_path,
        backoff_base_s=0.01,
    )
    with pytest.raises(AgentBalanceError, match=r"cannot reach the endpoint http://127\.0\.0\.1:\d+/v1") as error:
        complete(world, "tiny")
    assert "3 attempts" in str(error.value) and KEY not in str(error.value)
    assert world.stats.requests == 3 and world.stats.retries == 2


def test_a_missing_endpoint_or_key_is_a_user_error_when_the_world_is_built(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTBALANCE_BASE_URL", raising=False)
    monkeypatch.delenv("AGENTBALANCE_API_KEY", raising=False)
    with pytest.raises(AgentBalanceError, match=r"no endpoint for backbone 'tiny': set \$AGENTBALANCE_BASE_URL"):
        LiveWorld(catalog, cache_dir=tmp_path)
    monkeypatch.setenv("AGENTBALANCE_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(AgentBalanceError, match=r"no API key for backbone 'tiny': set \$AGENTBALANCE_API_KEY"):
        LiveWorld(catalog, cache_dir=tmp_path)
    monkeypatch.setenv("AGENTBALANCE_API_KEY", KEY)
    assert LiveWorld(catalog, cache_dir=tmp_path).endpoint(catalog["tiny"]).key_source == "$AGENTBALANCE_API_KEY"
    keyed = write_catalog(tmp_path, {"name": "keyed", "price_in": 1, "price_out": 1, "api_key_env": "KEYED_TEST_KEY"})
    monkeypatch.delenv("KEYED_TEST_KEY", raising=False)
    with pytest.raises(AgentBalanceError, match=r"'keyed' takes its API key from \$KEYED_TEST_KEY, which is not set"):
        LiveWorld(keyed, cache_dir=tmp_path)


def test_a_key_pasted_into_api_key_env_is_rejected_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match="must name an environment variable") as error:
        write_catalog(tmp_path, {"name": "oops", "price_in": 1, "price_out": 1, "api_key_env": "sk-live-abc.def"})
    assert "sk-live-abc.def" not in str(error.value)


def test_open_world_live_reads_the_endpoint_and_key_from_the_environment(
    server: LoopbackServer, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTBALANCE_BASE_URL", server.base_url)
    monkeypatch.setenv("AGENTBALANCE_API_KEY", KEY)
    world = open_world("live", catalog)
    assert isinstance(world, LiveWorld) and world.name == "live" and world.simulated is False
    assert complete(world, "tiny").answer == "4"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_per_backbone_base_url_and_key_env_override_the_world_defaults(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other_key = "sk-other-endpoint-key-5555"
    monkeypatch.setenv("OTHER_ENDPOINT_KEY", other_key)
    with LoopbackServer(api_keys={other_key}) as other:
        remote = {
            "name": "remote",
            "model": "remote-model",
            "price_in": 1,
            "price_out": 1,
            "base_url": other.base_url,
            "api_key_env": "OTHER_ENDPOINT_KEY",
        }
        catalog = write_catalog(tmp_path, remote)
        world = live(catalog, server, tmp_path)
        assert complete(world, "remote").answer == "4"
        assert complete(world, "tiny").answer == "4"
        assert [r.model for r in other.requests] == ["remote-model"]
        assert other.requests[0].headers["authorization"] == f"Bearer {other_key}"
        assert [r.model for r in server.requests] == ["tiny-model"]
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_concurrency_is_bounded_by_the_world(server: LoopbackServer, catalog: Catalog, tmp_path: Path) -> None:
    server.fail(Fault(kind="slow", delay_s=0.15), times=6)
    world = live(catalog, server, tmp_path, concurrency=2)
    queries = [Query(id=f"q{i}", question=f"What is {i} + {i}?", domain="math") for i in range(6)]

    async def all_at_once() -> list[Completion]:
        return list(await asyncio.gather(*(world.complete(single_call(world, "tiny", q)) for q in queries)))

    assert len(asyncio.run(all_at_once())) == 6
    assert server.count() == 6 and server.max_in_flight == 2


# ----------------------------------------------------------------------------- bad responses


def test_malformed_json_and_empty_choices_are_recorded_failures_never_retried(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    world = live(catalog, server, tmp_path)
    server.fail(Fault(kind="malformed"))
    with pytest.raises(AgentCallFailed, match="malformed JSON after 1 attempt"):
        complete(world, "tiny")
    server.fail(Fault(kind="empty_choices"))
    with pytest.raises(AgentCallFailed, match="no choices after 1 attempt") as failure:
        complete(world, "tiny")
    usage = server.requests[-1].response["usage"]  # type: ignore[index]
    assert failure.value.prompt_tokens == usage["prompt_tokens"] and failure.value.cost_usd > 0  # it was billed
    assert server.count() == 2 and world.stats.failures == 2 and world.stats.retries == 0


def test_a_bad_request_is_a_recorded_failure_with_the_servers_reason(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.fail(Fault(status=400, message=f"maximum context length exceeded (key {KEY})"))
    with pytest.raises(AgentCallFailed, match=r"HTTP 400: maximum context length exceeded") as failure:
        complete(live(catalog, server, tmp_path), "tiny")
    assert KEY not in str(failure.value) and server.count() == 1


def test_missing_usage_is_estimated_and_the_completion_says_so(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.fail(Fault(kind="no_usage"))
    world = live(catalog, server, tmp_path)
    call = single_call(world, "tiny")
    completion = asyncio.run(world.complete(call))
    assert isinstance(completion, LiveCompletion) and completion.usage_estimated
    assert completion.prompt_tokens == estimate_prompt_tokens(call)
    assert completion.completion_tokens == -(-len(completion.text) // 4)
    assert world.stats.usage_estimated == 1
    cached = complete(live(catalog, server, tmp_path), "tiny")
    assert isinstance(cached, LiveCompletion) and cached.cached and cached.usage_estimated


# ----------------------------------------------------------------------------- record


def test_record_writes_a_replay_world_that_loads_with_measured_latency(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    server.always("mid-model", Fault(status=503))
    server.reasoning_tokens["think-model"] = 40
    task = ArithmeticTask(
        tuple(
            Query(id=f"q{i}", question=f"What is {i} + {4 - i}?", answer="4" if i else "5", domain="math")
            for i in range(4)
        )
    )
    world = live(catalog, server, tmp_path / "cache", max_retries=1)
    out = tmp_path / "recorded"
    seen: list[tuple[int, int]] = []
    summary = asyncio.run(record(world, task, out, concurrency=4, progress=lambda d, t, paid: seen.append((d, t))))

    assert (summary.questions, summary.backbones, summary.calls, summary.failures) == (4, 3, 12, 4)
    assert summary.failures_by_backbone == {"tiny": 0, "think": 0, "mid": 4}
    assert summary.accuracy == {"tiny": 0.75, "think": 0.75, "mid": 0.0}
    assert seen[-1] == (12, 12) and len(seen) == 12
    assert sorted(p.name for p in out.iterdir()) == ["models.yaml", "outcomes.csv.gz", "questions.jsonl"]

    outcomes = pd.read_csv(out / "outcomes.csv.gz", dtype={"answer": str}, keep_default_na=False)
    assert list(outcomes.columns) == ["id", "model", "answer", "correct", "completion_tokens", "cost_usd", "latency_s"]
    failed = outcomes[outcomes["model"] == "mid"]
    assert (failed["answer"] == "").all() and (failed["correct"] == 0).all()
    think = outcomes[outcomes["model"] == "think"].set_index("id")
    sent = {json.dumps(r.body["messages"]): r for r in server.requests_for("think-model")}  # type: ignore[index]
    assert len(sent) == 4 and all(r.body["enable_thinking"] for r in sent.values())  # type: ignore[index]
    tokens = sorted(r.response["usage"]["completion_tokens"] for r in sent.values())  # type: ignore[index]
    assert sorted(think["completion_tokens"]) == tokens
    assert (outcomes[outcomes["model"] != "mid"]["latency_s"] > 0).all()
    assert (outcomes[outcomes["model"] != "mid"]["latency_s"] < 2).all()

    replay = ReplayWorld.load(out)
    assert replay.describe()["questions"] == 4 and replay.kind == "numeric"
    models = yaml.safe_load((out / "models.yaml").read_text())["backbones"]
    assert [m["name"] for m in models] == ["tiny", "think", "mid"]
    assert models[1]["request"] == {"enable_thinking": True} and models[1]["model"] == "think-model"
    solver = Agent(id="s", role=SOLVER.name, backbone="think")
    question = replay.resolve_query(Query(id="q1", question="(recorded)"))
    recorded = asyncio.run(replay.complete(AgentCall(solver, SOLVER, replay.catalog["think"], question)))
    assert recorded.latency_s == pytest.approx(think.loc["q1", "latency_s"])
    assert recorded.answer == "4" and recorded.correct is True
    for file in out.iterdir():
        content = file.read_bytes()
        assert KEY.encode() not in content and server.base_url.encode() not in content

    again = asyncio.run(record(live(catalog, server, tmp_path / "cache", max_retries=0), task, tmp_path / "again"))
    assert again.cached == 8 and again.failures == 4  # the answered calls are never paid twice


def test_record_stops_on_a_user_error_and_writes_nothing(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    world = live(catalog, server, tmp_path / "cache", api_key="sk-not-the-right-one")
    task = ArithmeticTask((QUERY,))
    with pytest.raises(AgentBalanceError, match=r"HTTP 401"):
        asyncio.run(record(world, task, tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_record_stops_at_its_spend_cap_keeps_the_whole_questions_and_a_rerun_continues_from_the_cache(
    server: LoopbackServer, catalog: Catalog, tmp_path: Path
) -> None:
    """`max_usd_total`: no call starts once the recording has paid the cap; the questions every backbone answered
    are written as a complete world; a rerun with a larger cap pays only for what was not asked (or was left out)."""
    task = ArithmeticTask(tuple(Query(id=f"q{i}", question=f"What is {i} + 1?", answer=str(i + 1)) for i in range(4)))
    full = asyncio.run(record(live(catalog, server, tmp_path / "priced"), task, tmp_path / "full", concurrency=1))
    outcomes = pd.read_csv(tmp_path / "full" / "outcomes.csv.gz", dtype={"answer": str}, keep_default_na=False)
    first_question = float(outcomes[outcomes["id"] == "q0"]["cost_usd"].sum())
    assert full.paid_usd > first_question > 0

    seen: list[float] = []
    capped = asyncio.run(
        record(
            live(catalog, server, tmp_path / "cache"),
            task,
            tmp_path / "capped",
            concurrency=1,
            max_usd_total=first_question * 0.999,  # reached by the first question's last call
            progress=lambda done, total, paid: seen.append(paid),
        )
    )
    assert capped.capped and (capped.questions, capped.asked, capped.calls, capped.dropped) == (1, 4, 3, 0)
    assert capped.paid_usd == pytest.approx(first_question) and seen == sorted(seen) and len(seen) == 3
    assert ReplayWorld.load(tmp_path / "capped").describe()["questions"] == 1

    resumed = asyncio.run(record(live(catalog, server, tmp_path / "cache"), task, tmp_path / "capped", concurrency=1))
    assert not resumed.capped and resumed.questions == 4 and resumed.cached == 3  # the first question, not paid again
    assert resumed.paid_usd == pytest.approx(full.paid_usd - first_question)

    with pytest.raises(AgentBalanceError, match=r"spend cap of USD 1e-12 was reached .* nothing was written"):
        asyncio.run(
            record(live(catalog, server, tmp_path / "c2"), task, tmp_path / "none", concurrency=1, max_usd_total=1e-12)
        )
    assert not (tmp_path / "none").exists()
    with pytest.raises(AgentBalanceError, match=r"spend cap must be a positive number"):
        asyncio.run(record(live(catalog, server, tmp_path / "c3"), task, tmp_path / "none", max_usd_total=0))
