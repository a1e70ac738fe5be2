"""The server's own overhead per request: `agentbalance serve` in front of the simulated world, which answers
every agent call instantly (its modelled latency, a few seconds a query, is reported but never slept), so the
measured time is what the server adds: HTTP, validation, MAS construction (query embedding + controller
forward pass, batched across concurrent requests), execution bookkeeping and serialisation.

The server runs as the real command in its own process; a minimal keep-alive HTTP/1.1 client (raw asyncio
streams, so the client costs little) sends requests at concurrency 1 and 64, each request a question the
server has not seen ("fresh": every one is embedded) and, for comparison, questions it has ("repeated": the
embedding comes from memory). Client and server share the machine's cores.
Run: .venv/bin/python benchmarks/serve_overhead.py  (writes benchmarks/results/serve-overhead.json; builds a
small controller into runs/benchmark-serve/run unless --model names one)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentbalance.splits import synthetic_split

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_RUN = ROOT / "runs" / "benchmark-serve" / "run"


def ensure_model(path: Path) -> Path:
    """A small simulated-world controller (the tests' size), built once."""
    if (path / "config.json").is_file():
        return path
    from agentbalance.budgets import Budget
    from agentbalance.experiment import ExperimentSpec
    from agentbalance.train.build import BuildSpec, build
    from agentbalance.train.config import TrainConfig

    build(BuildSpec(ExperimentSpec(sizes=(40, 20, 20)), Budget(0.5, 60.0), TrainConfig(epochs=1), restarts=1), path)
    return path


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads the JSON answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await self.writer.drain()
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        return int(status_line.split()[1]), json.loads(await self.reader.readexactly(length))

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def load(port: int, questions: list[str], concurrency: int) -> dict[str, Any]:
    """Every question once, `concurrency` connections each sending its share back to back."""
    latencies: list[float] = []
    modelled: list[float] = []
    executed: list[float] = []
    queue = list(reversed(questions))

    async def worker() -> None:
        connection = await Connection.open(port)
        try:
            while queue:
                question = queue.pop()
                sent = time.perf_counter()
                status, answer = await connection.post(
                    "/v1/chat/completions",
                    {"model": "agentbalance", "messages": [{"role": "user", "content": question}]},
                )
                latencies.append(time.perf_counter() - sent)
                if status != 200:
                    raise RuntimeError(f"HTTP {status}: {answer}")
                modelled.append(answer["agentbalance"]["latency_s"])
                executed.append(answer["agentbalance"]["wall_s"])
        finally:
            await connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "requests_per_s": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "mean_ms": 1000 * statistics.fmean(ordered),
        "execution_bookkeeping_p50_ms": 1000 * statistics.median(executed),  # the runner's own wall time
        "modelled_latency_mean_s": statistics.fmean(modelled),  # what a real world would add: not slept here
    }


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process has used so far, from /proc (None elsewhere): the server's work per
    request, which other load on the machine does not inflate the way it inflates wall time."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(server: subprocess.Popen[bytes], port: int, questions: list[str], concurrency: int) -> dict[str, Any]:
    before = cpu_seconds(server.pid)
    result = asyncio.run(load(port, questions, concurrency))
    after = cpu_seconds(server.pid)
    if before is not None and after is not None:
        result["server_cpu_ms_per_request"] = 1000 * (after - before) / len(questions)
    return result


def healthy(port: int) -> bool:
    import http.client

    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/health")
        return connection.getresponse().status == 200
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="a run folder (default: build a small one)")
    parser.add_argument("--requests", type=int, default=200, help="requests per measurement at concurrency 1")
    parser.add_argument("--per-connection", type=int, default=20, help="requests per connection at concurrency 64")
    args = parser.parse_args()
    model = ensure_model(args.model or DEFAULT_RUN)
    port = free_port()
    load_before = os.getloadavg()
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "agentbalance.cli", "serve", "--model", str(model), "--port", str(port)],
            stdout=log,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + 180
            while not healthy(port):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(f"the server did not start:\n{log.read()}")
                time.sleep(0.2)
            total = 20 + 2 * (args.requests + 64 * args.per_connection)
            texts = [q.render() for q in synthetic_split("test", total, seed=7)]
            assert len(set(texts)) == total, "the questions must be distinct for the fresh measurements"
            warm, texts = texts[:20], texts[20:]
            asyncio.run(load(port, warm, 1))
            results = {}
            for concurrency, count in ((1, args.requests), (64, 64 * args.per_connection)):
                fresh, texts = texts[:count], texts[count:]
                results[f"fresh_c{concurrency}"] = measured(server, port, fresh, concurrency)
                results[f"repeated_c{concurrency}"] = measured(server, port, fresh, concurrency)
        finally:
            server.terminate()
            server.wait(timeout=60)
    command = "python benchmarks/serve_overhead.py" + "".join(
        f" --{flag} {value}"
        for flag, value, default in (
            ("model", args.model, None),
            ("requests", args.requests, 200),
            ("per-connection", args.per_connection, 20),
        )
        if value != default
    )
    document = {
        "command": command,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}; client and server on the same cores",
        "load_average_before_after": [[round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]],
        "world": "simulated: agent calls answer at once, so LLM time is zero and the modelled latency is not slept",
        "what_is_measured": "client-side wall time per request (HTTP round trip on loopback + everything the "
        "server does); server_cpu_ms_per_request: the server process's CPU time over the requests; "
        "execution_bookkeeping: the runner's own wall time, reported by the server",
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serve-overhead.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
