"""Load: thousands of 5-agent MAS queries through the live world against a faulty OpenAI-compatible server.

The server (tests/loopback_server.py, in its own process so the RSS measured here is the client's alone)
answers after a random delay and injects errors (429 with and without Retry-After, 500, 503, resets,
truncated bodies, malformed JSON, empty choices, answers slower than the timeout) into a fraction of requests.
The client is agentbalance's own path: Runner + LiveWorld (retries, deadline, cache), queries fed by a
bounded pool of workers. Checked: every query ends with a trace (answered, or its failures recorded), no
query id is lost or duplicated, every answer the client accepted is one the server sent for that query (none
paid twice), and the cache holds exactly the answered calls. Reported: throughput, per-query wall time,
retries and failures, and peak RSS (resource.getrusage) with RSS along the run, to show memory is bounded.
Run from the repository root (the loopback server lives in tests/):
    .venv/bin/python -m benchmarks.load_live   (writes benchmarks/results/load_live.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.runtime.runner import Runner
from agentbalance.runtime.trace import Trace
from agentbalance.worlds.live import LiveWorld

RESULTS = Path(__file__).resolve().parent / "results"
KEY = "sk-load-benchmark-0000"
QUERY_TAG = re.compile(r"Load query (load-\d+):")


@dataclass(frozen=True)
class Config:
    queries: int
    concurrency: int
    error_rate: float
    max_delay_s: float
    timeout_s: float
    max_retries: int
    seed: int


def faults(timeout_s: float) -> list[Any]:
    """Every kind of error a real endpoint produces, equally likely among the injected ones."""
    from tests.loopback_server import Fault

    return [
        Fault(status=429, retry_after="0.05"),
        Fault(status=429),
        Fault(status=500),
        Fault(status=503),
        Fault(kind="reset"),
        Fault(kind="drop"),
        Fault(kind="truncated"),
        Fault(kind="malformed"),
        Fault(kind="empty_choices"),
        Fault(kind="slow", delay_s=timeout_s + 0.25),
    ]


def describe(fault: Any, timeout_s: float) -> str:
    """A fault in a few words; a normal answer after a short random delay is "answer"."""
    if fault is None or (fault.kind == "slow" and fault.delay_s < timeout_s):
        return "answer"
    if fault.kind == "status":
        return f"HTTP {fault.status}" + (f" Retry-After {fault.retry_after} s" if fault.retry_after else "")
    if fault.kind == "slow":
        return f"answer after {fault.delay_s:g} s (past the {timeout_s:g} s timeout)"
    return {
        "reset": "connection reset (RST)",
        "drop": "connection closed, no answer",
        "truncated": "half a body, then RST",
    }.get(fault.kind, fault.kind)


def serve(config: Config, pipe: Connection) -> None:
    """The server process: report the port, serve until told to stop, then report what it sent."""
    from tests.loopback_server import LoopbackServer, random_schedule

    with LoopbackServer(api_keys={KEY}) as server:
        server.schedule(
            random_schedule(
                config.error_rate, faults(config.timeout_s), seed=config.seed, delay_s=(0.0, config.max_delay_s)
            )
        )
        pipe.send(server.port)
        pipe.recv()  # "stop"
        delivered: Counter[str] = Counter()  # answers a waiting client received, per query id
        for request in server.requests:
            if not request.answered or (request.fault is not None and request.fault.delay_s >= config.timeout_s):
                continue
            found = QUERY_TAG.search(str((request.body or {}).get("messages", [{}])[-1].get("content", "")))
            delivered[found.group(1) if found else "?"] += 1
        kinds = Counter(describe(r.fault, config.timeout_s) for r in server.requests)
        pipe.send(
            {
                "requests": len(server.requests),
                "by_kind": dict(sorted(kinds.items())),
                "delivered": dict(delivered),
                "max_in_flight": server.max_in_flight,
            }
        )


def five_agent_mas() -> MAS:
    """Three solvers, a verifier reading them, a decision agent reading the verifier and the first solver."""
    agents = [
        Agent(id="s0", role="Mathematician", backbone="qwen3-8b"),
        Agent(id="s1", role="Algebra Specialist", backbone="qwen3-14b"),
        Agent(id="s2", role="Number Theorist", backbone="qwen3-30b-a3b"),
        Agent(id="v", role="Verifier", backbone="qwen3-32b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b"),
    ]
    return MAS(agents, [("s0", "v"), ("s1", "v"), ("s2", "v"), ("s0", "d"), ("v", "d")], "d")


def rss_mb() -> float:
    """Resident set size now, from /proc (Linux); the peak comes from getrusage."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@dataclass
class Outcome:
    """What is kept of one query's trace: enough to check it, small enough that memory stays flat."""

    id: str
    answered: bool
    correct: bool | None
    failures: int
    succeeded: int
    cost_usd: float
    wall_s: float


async def drive(config: Config, port: int, cache_dir: Path) -> dict[str, Any]:
    world = LiveWorld(
        Catalog.load(),
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key=KEY,
        concurrency=config.concurrency,
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
        backoff_base_s=0.05,
        backoff_max_s=0.5,
        cache_dir=cache_dir,
        seed=config.seed,
    )
    runner = Runner(world, RoleSet.load("math"), concurrency=config.concurrency, grader=lambda q, a: a == q.answer)
    mas = five_agent_mas()
    queue: asyncio.Queue[Query | None] = asyncio.Queue()
    for i in range(config.queries):
        queue.put_nowait(
            Query(id=f"load-{i:05d}", question=f"Load query load-{i:05d}: what is {i} - {i} + 4?", answer="4")
        )
    workers = 2 * config.concurrency  # enough queries in flight to keep every call slot busy at depth 3
    for _ in range(workers):
        queue.put_nowait(None)
    limit = asyncio.Semaphore(config.concurrency)
    outcomes: dict[str, Outcome] = {}
    duplicated: list[str] = []
    memory: list[dict[str, float]] = []
    marks = {config.queries * k // 4 for k in (1, 2, 3, 4)}

    def keep(trace: Trace) -> None:
        if trace.id in outcomes:
            duplicated.append(trace.id)
        outcomes[trace.id] = Outcome(
            trace.id,
            trace.answer is not None,
            trace.correct,
            trace.failures,
            sum(agent.error is None and agent.skipped is None for agent in trace.agents),
            trace.cost_usd,
            trace.wall_s,
        )
        if len(outcomes) in marks:
            memory.append(
                {"queries_done": len(outcomes), "rss_mb": round(rss_mb(), 1), "peak_rss_mb": round(peak_rss_mb(), 1)}
            )

    async def worker() -> None:
        while (query := await queue.get()) is not None:
            keep(await runner.run(mas, query, limit))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    wall_s = time.perf_counter() - started
    cached = len(world.cache) if world.cache is not None else 0
    await world.aclose()
    return {
        "world": world,
        "outcomes": outcomes,
        "duplicated": duplicated,
        "memory": memory,
        "wall_s": wall_s,
        "cached": cached,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--error-rate", type=float, default=0.05)
    parser.add_argument("--max-delay-ms", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--max-retries", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "load_live.json")
    args = parser.parse_args()
    config = Config(
        args.queries,
        args.concurrency,
        args.error_rate,
        args.max_delay_ms / 1000,
        args.timeout,
        args.max_retries,
        args.seed,
    )

    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(target=serve, args=(config, theirs), daemon=True)
    server.start()
    try:
        port = ours.recv()
        baseline_rss = rss_mb()
        with tempfile.TemporaryDirectory(prefix="agentbalance-load-") as cache_dir:
            run = asyncio.run(drive(config, port, Path(cache_dir)))
        ours.send("stop")
        served = ours.recv()
    finally:
        server.join(timeout=30)
        if server.is_alive():
            server.terminate()

    world: LiveWorld = run["world"]
    outcomes: dict[str, Outcome] = run["outcomes"]
    expected = {f"load-{i:05d}" for i in range(config.queries)}
    mismatched = [
        query_id for query_id, outcome in outcomes.items() if served["delivered"].get(query_id, 0) != outcome.succeeded
    ]
    succeeded_calls = sum(o.succeeded for o in outcomes.values())
    walls = [o.wall_s for o in outcomes.values()]
    checks = {
        "every_query_has_a_trace": set(outcomes) == expected,
        "no_query_lost": not (expected - set(outcomes)),
        "no_query_duplicated": not run["duplicated"] and len(outcomes) == config.queries,
        "every_unanswered_query_records_its_failures": all(o.answered or o.failures > 0 for o in outcomes.values()),
        "every_accepted_answer_was_sent_once_for_its_query": not mismatched,
        "cache_holds_exactly_the_answered_calls": run["cached"] == succeeded_calls,
        "failed_calls_match_the_traces": world.stats.failures == sum(o.failures for o in outcomes.values()),
    }
    result = {
        "command": " ".join([".venv/bin/python -m benchmarks.load_live", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), CPython {platform.python_version()}",
        "config": asdict(config),
        "injected_faults": [describe(f, config.timeout_s) for f in faults(config.timeout_s)],
        "queries": config.queries,
        "agents_per_query": len(five_agent_mas()),
        "answered": sum(o.answered for o in outcomes.values()),
        "correct": sum(bool(o.correct) for o in outcomes.values()),
        "queries_with_failed_agents": sum(o.failures > 0 for o in outcomes.values()),
        "agent_calls": world.stats.calls,
        "agent_calls_failed": world.stats.failures,
        "http_requests": world.stats.requests,
        "retries": world.stats.retries,
        "server": {k: served[k] for k in ("requests", "by_kind", "max_in_flight")},
        "wall_s": round(run["wall_s"], 2),
        "throughput_queries_per_s": round(config.queries / run["wall_s"], 1),
        "throughput_requests_per_s": round(world.stats.requests / run["wall_s"], 1),
        "query_wall_s_note": "per query, including its wait for one of the call slots shared by all queries",
        "query_wall_s": {
            "p50": round(statistics.median(walls), 3),
            "p95": round(percentile(walls, 0.95), 3),
            "max": round(max(walls), 3),
        },
        "memory": {
            "rss_before_mb": round(baseline_rss, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            "along_the_run": run["memory"],
        },
        "mismatched_query_ids": mismatched[:10],
        "checks": checks,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    if not all(checks.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
