"""Samples in the live world and `record --samples K`, against the loopback server: sample k > 0 is its own
request (seed k) and its own cache entry, sample 0's key is the key it always was, and K samples recorded are
a multi-sample replay world."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.worlds.base import AgentCall, Completion
from agentbalance.worlds.cache import CachedResponse, ResponseCache
from agentbalance.worlds.live import CACHE_FILE, LiveWorld
from agentbalance.worlds.recording import SOLVER, record
from agentbalance.worlds.replay import ReplayWorld
from tests.conftest import agentbalance
from tests.fakes import ArithmeticTask, ScriptedWorld
from tests.loopback_server import LoopbackServer

KEY = "sk-loopback-samples"
ROLES = RoleSet.load("math")
QUERY = Query(id="q1", question="What is 2 + 2?", answer="4", domain="math")
TASK = ArithmeticTask(tuple(Query(id=f"q{i}", question=f"What is {i} + {4 - i}?", answer="4") for i in range(2)))


def by_seed(body: dict[str, Any]) -> str:
    """An endpoint whose answer follows the seed: 4 without one (right), 4 + seed with one."""
    return f"Adding up. So the result is \\boxed{{{4 + int(body.get('seed') or 0)}}}."


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(api_keys={KEY}, responder=by_seed) as running:
        yield running


def catalog(folder: Path, tiny_request: dict[str, Any] | None = None) -> Catalog:
    entries = [
        {"name": "tiny", "model": "tiny-model", "request": tiny_request or {}},
        {"name": "mid", "model": "mid-model"},
    ]
    for entry in entries:
        entry.update(family="test", reasoning=False, params_active_b=8, price_in=0.5, price_out=1.5)
    path = folder / "catalog.yaml"
    path.write_text(yaml.safe_dump({"backbones": entries}), encoding="utf-8")
    return Catalog.load(path)


def live(server: LoopbackServer, folder: Path, temperature: float = 0.7, **options: Any) -> LiveWorld:
    options = {"catalog": catalog(folder), "cache_dir": folder / "cache", "max_retries": 0, **options}
    return LiveWorld(base_url=server.base_url, api_key=KEY, timeout_s=5.0, temperature=temperature, **options)


def ask(world: LiveWorld, backbone: str, sample: int) -> Completion:
    agent = Agent(id="a", role="Mathematician", backbone=backbone)
    call = AgentCall(agent, ROLES["Mathematician"], world.catalog[backbone], QUERY, sample=sample)
    return asyncio.run(world.complete(call))


def key_before_samples(world: LiveWorld, backbone: str) -> str:
    """The cache key as it was computed before samples existed (v1), written out by hand."""
    agent = Agent(id="a", role="Mathematician", backbone=backbone)
    messages = AgentCall(agent, ROLES["Mathematician"], world.catalog[backbone], QUERY).messages
    document = {
        "v": 1,
        "base_url": world.endpoint(world.catalog[backbone]).base_url,
        "model": world.catalog[backbone].model_id,
        "messages": messages,
        "params": {"temperature": world.temperature},
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


# ----------------------------------------------------------------------------- the live world


def test_sample_k_is_sent_as_seed_k_at_the_worlds_temperature_and_cached_apart(
    server: LoopbackServer, tmp_path: Path
) -> None:
    world = live(server, tmp_path)
    answers = [ask(world, "tiny", sample).answer for sample in (0, 2)]
    first, second = server.requests
    assert "seed" not in first.body and second.body["seed"] == 2  # type: ignore[index, operator]
    assert first.body["temperature"] == second.body["temperature"] == 0.7  # type: ignore[index]
    assert answers == ["4", "6"]
    again = live(server, tmp_path)
    assert [ask(again, "tiny", sample).answer for sample in (0, 2)] == answers
    assert again.stats.cache_hits == 2 and len(server.requests) == 2  # a rerun pays nothing


def test_a_cache_entry_written_before_samples_still_hits_as_sample_0(server: LoopbackServer, tmp_path: Path) -> None:
    world = live(server, tmp_path)
    ResponseCache(tmp_path / "cache" / CACHE_FILE).put(
        key_before_samples(world, "mid"), CachedResponse("so \\boxed{9}", 10, 3, 0, 0.5)
    )
    completion = ask(world, "mid", 0)
    assert completion.cached and completion.answer == "9" and not server.requests


def test_a_backbone_that_drops_the_seed_still_gets_one_call_per_sample(server: LoopbackServer, tmp_path: Path) -> None:
    world = live(server, tmp_path, catalog=catalog(tmp_path, tiny_request={"seed": None}))
    for sample in (0, 1, 2):
        ask(world, "tiny", sample)
    assert len(server.requests) == 3 and not any("seed" in r.body for r in server.requests)  # type: ignore[operator]
    assert world.cache is not None and len(world.cache) == 3


def test_two_agents_on_one_backbone_in_a_live_mas_are_two_distinct_calls(
    server: LoopbackServer, tmp_path: Path
) -> None:
    agents = [Agent(id=i, role="Mathematician", backbone="tiny") for i in ("a0", "a1")]
    mas = MAS([*agents, Agent(id="d", role="Decision Maker", backbone="mid")], [("a0", "d"), ("a1", "d")], "d")
    (trace,) = Runner(live(server, tmp_path), ROLES).run_sync([(mas, QUERY)])
    seeds = sorted(str(r.body.get("seed")) for r in server.requests_for("tiny-model"))  # type: ignore[union-attr]
    assert seeds == ["1", "None"]
    assert {a.id: a.answer for a in trace.agents if a.id != "d"} == {"a0": "4", "a1": "5"}


# ----------------------------------------------------------------------------- record --samples K


def test_record_with_3_samples_asks_3_times_and_writes_a_multi_sample_world(
    server: LoopbackServer, tmp_path: Path
) -> None:
    out = tmp_path / "recorded"
    summary = asyncio.run(record(live(server, tmp_path), TASK, out, samples=3))
    assert (summary.questions, summary.backbones, summary.samples, summary.calls) == (2, 2, 3, 12)
    assert len(server.requests) == 12  # 3 calls per (question, backbone)
    outcomes = pd.read_csv(out / "outcomes.csv.gz", dtype={"answer": str}, keep_default_na=False)
    assert list(outcomes.columns[:3]) == ["id", "model", "sample"]
    assert sorted(outcomes.groupby(["id", "model"])["sample"].apply(tuple)) == [(0, 1, 2)] * 4

    replay = ReplayWorld.load(out)
    assert replay.samples("q1", "tiny") == 3
    solver = Agent(id="s", role=SOLVER.name, backbone="tiny")
    for sample in range(3):
        call = AgentCall(solver, SOLVER, replay.catalog["tiny"], replay.questions[1], sample=sample)
        completion = replay.answer(call)
        assert (completion.answer, completion.correct) == (str(4 + sample), sample == 0)
    assert replay.accuracy("tiny", "train") == pytest.approx(1 / 3)

    again = asyncio.run(record(live(server, tmp_path), TASK, tmp_path / "again", samples=3))
    assert again.cached == 12 and len(server.requests) == 12  # a rerun makes no call


def test_record_refuses_samples_that_could_not_differ(server: LoopbackServer, tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match=r"temperature above 0 \(--temperature T\), got 0\.0"):
        asyncio.run(record(live(server, tmp_path, temperature=0.0), TASK, tmp_path / "cold", samples=2))
    with pytest.raises(AgentBalanceError, match="one answer per question and backbone"):
        asyncio.run(record(ScriptedWorld(catalog(tmp_path)), TASK, tmp_path / "sim", samples=2))
    with pytest.raises(AgentBalanceError, match="samples must be at least 1"):
        asyncio.run(record(live(server, tmp_path), TASK, tmp_path / "none", samples=0))
    assert not server.requests and not any((tmp_path / name).exists() for name in ("cold", "sim", "none"))


def test_the_record_command_takes_samples_and_a_temperature(server: LoopbackServer, tmp_path: Path) -> None:
    catalog(tmp_path)
    questions = tmp_path / "q.jsonl"
    lines = [json.dumps({"id": q.id, "question": q.question, "answer": "4"}) for q in TASK.queries]
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    command = ["record", "--world", "live", "--base-url", server.base_url, "--task", "jsonl", "--data", str(questions)]
    command += ["--catalog", "catalog.yaml", "--out", "world", "--cache-dir", "cache", "--samples", "2"]
    env = {"AGENTBALANCE_API_KEY": KEY}
    refused = agentbalance(*command, cwd=tmp_path, env=env)
    assert refused.returncode == 2 and not server.requests
    assert refused.stderr.startswith("error: record: 2 samples per question need a temperature above 0 (--temperature")
    done = agentbalance(*command, "--temperature", "0.5", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "recorded 2 questions x 2 backbones x 2 samples" in done.stdout
    assert len(server.requests) == 8 and {r.body["temperature"] for r in server.requests} == {0.5}  # type: ignore[index]
    assert ReplayWorld.load(tmp_path / "world").samples("q0", "mid") == 2
