"""What streaming costs `agentbalance serve` and what cancellation saves it, measured on the real command.

Part 1 (simulated world: every agent call answers at once, so what is measured is the server): time to the
first chunk (the role chunk, sent before the MAS is built) and to the last byte (`data: [DONE]`), p50/p95, and
requests/s at concurrency 1 and 64, streamed and not, on questions the server has not embedded ("fresh", a
disjoint set of the same size for each) and then on one set it has ("repeated", the same questions both ways);
the overhead of streaming per request is the streamed time minus the plain one, and the server process's CPU
time per request (from /proc). Part 2 (live world in front of `tests/loopback_server.py`, every upstream call
taking --call-s seconds, the server's response cache off; math questions, on half of which the fake's backbones
give different answers, so that a MAS's conditional decision maker runs as a second step): each question is
asked in full once to learn its MAS's calls, then sent again and hung up on after --hang-up-s seconds, plain and
streamed, and asked by the `openai` client with timeout=--hang-up-s and its default 2 retries; the upstream
requests that arrived for each are counted at the fake (waiting until it is quiet), with those it saw abandoned
and any that arrived after the hang-up.
It never measures a remote endpoint: the upstream is the fake on 127.0.0.1, and no key is real.
Run: .venv/bin/python -m benchmarks.serve_streaming  (writes benchmarks/results/serve-streaming.json; builds a
small controller into runs/benchmark-serve/run unless --model names one)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentbalance.splits import synthetic_split
from benchmarks.serve_overhead import DEFAULT_RUN, RESULTS, Connection, cpu_seconds, ensure_model, free_port, healthy
from tests.loopback_server import Fault, LoopbackServer, Responder, default_responder

CHAT = "/v1/chat/completions"


def chat(question: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "agentbalance", "messages": [{"role": "user", "content": question}]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


@dataclass
class Streamed:
    """One streamed answer as the client saw it: seconds from sending to the first event and to `[DONE]`."""

    first_s: float
    done_s: float
    events: int
    details: dict[str, Any]  # the last chunk's `agentbalance` object


class StreamingConnection(Connection):
    """serve_overhead's keep-alive connection, which also reads a chunked `text/event-stream` answer."""

    async def stream(self, path: str, body: dict[str, Any]) -> Streamed:
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        sent = time.perf_counter()
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding") != "chunked":
            answer = await self.reader.readexactly(int(headers.get("content-length", 0)))
            raise RuntimeError(f"HTTP {status}, not a stream: {answer[:300]!r}")
        first = done = None
        events, details, buffer = 0, {}, b""
        while size := int((await self.reader.readline()).split(b";")[0], 16):
            buffer += (await self.reader.readexactly(size + 2))[:-2]
            while b"\n\n" in buffer:  # an event ends with a blank line
                event, buffer = buffer.split(b"\n\n", 1)
                payload = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
                if not payload:
                    continue  # a ping comment
                events += 1
                first = first or time.perf_counter()
                if payload == b"[DONE]":
                    done = time.perf_counter()
                elif "agentbalance" in (chunk := json.loads(payload)):
                    details = chunk["agentbalance"]
                elif "error" in chunk:
                    raise RuntimeError(f"an error event: {chunk}")
        await self.reader.readline()  # the empty trailer
        if first is None or done is None:
            raise RuntimeError("a stream without [DONE]")
        return Streamed(first - sent, done - sent, events, details)


def percentiles(seconds: list[float], prefix: str) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        f"{prefix}_p50_ms": 1000 * statistics.median(ordered),
        f"{prefix}_p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        f"{prefix}_mean_ms": 1000 * statistics.fmean(ordered),
    }


async def load(port: int, questions: list[str], concurrency: int, stream: bool) -> dict[str, Any]:
    """Every question once, `concurrency` connections each sending its share back to back, streamed or not."""
    first: list[float] = []
    total: list[float] = []
    events: list[int] = []
    queue = list(reversed(questions))

    async def worker() -> None:
        connection = await StreamingConnection.open(port)
        try:
            while queue:
                question = queue.pop()
                if stream:
                    answer = await connection.stream(CHAT, chat(question, True))
                    first.append(answer.first_s)
                    total.append(answer.done_s)
                    events.append(answer.events)
                    continue
                sent = time.perf_counter()
                status, body = await connection.post(CHAT, chat(question, False))
                total.append(time.perf_counter() - sent)
                if status != 200:
                    raise RuntimeError(f"HTTP {status}: {body}")
        finally:
            await connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    result: dict[str, Any] = {"concurrency": concurrency, "stream": stream, "requests": len(total)}
    result["requests_per_s"] = len(total) / wall
    if stream:
        result |= percentiles(first, "first_chunk") | percentiles(total, "done")
        result["events_per_stream_mean"] = statistics.fmean(events)
    else:
        result |= percentiles(total, "total")
    return result


def measured(server: subprocess.Popen[bytes], port: int, questions: list[str], concurrency: int, stream: bool) -> dict:
    before = cpu_seconds(server.pid)
    result = asyncio.run(load(port, questions, concurrency, stream))
    after = cpu_seconds(server.pid)
    if before is not None and after is not None:
        result["server_cpu_ms_per_request"] = 1000 * (after - before) / len(questions)
    return result


@contextlib.contextmanager
def serving(model: Path, extra: list[str], env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen, int]]:
    """`agentbalance serve` as the real command in its own process, once /health answers; stopped with SIGTERM."""
    port = free_port()
    command = [sys.executable, "-m", "agentbalance.cli", "serve", "--model", str(model), "--port", str(port), *extra]
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(command, stdout=log, stderr=log, env=env)
        try:
            deadline = time.monotonic() + 180
            while not healthy(port):
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(f"the server did not start:\n{log.read()}")
                time.sleep(0.2)
            yield server, port
        finally:
            server.terminate()
            server.wait(timeout=60)


def streaming_part(model: Path, requests: int, per_connection: int) -> dict[str, Any]:
    """Part 1: plain vs streamed, fresh then repeated questions, at concurrency 1 and 64, in the simulated world."""
    results: dict[str, Any] = {}
    with serving(model, []) as (server, port):
        sizes = ((1, requests), (64, 64 * per_connection))
        total = 20 + sum(2 * count for _, count in sizes)
        texts = list(dict.fromkeys(q.render() for q in synthetic_split("test", 2 * total, seed=17)))[:total]
        assert len(texts) == total, "the questions must be distinct for the fresh measurements"
        warm, texts = texts[:20], texts[20:]
        asyncio.run(load(port, warm, 1, False))
        asyncio.run(load(port, warm, 1, True))
        for concurrency, count in sizes:
            plain, streamed, texts = texts[:count], texts[count : 2 * count], texts[2 * count :]
            measurements = {
                "fresh_plain": measured(server, port, plain, concurrency, False),
                "fresh_stream": measured(server, port, streamed, concurrency, True),
                "repeated_plain": measured(server, port, plain, concurrency, False),  # the same questions both ways
                "repeated_stream": measured(server, port, plain, concurrency, True),
            }
            for kind in ("fresh", "repeated"):
                plain_run, stream_run = measurements[f"{kind}_plain"], measurements[f"{kind}_stream"]
                overhead = {
                    "done_minus_total_p50_ms": stream_run["done_p50_ms"] - plain_run["total_p50_ms"],
                    "done_minus_total_mean_ms": stream_run["done_mean_ms"] - plain_run["total_mean_ms"],
                }
                if "server_cpu_ms_per_request" in plain_run and "server_cpu_ms_per_request" in stream_run:
                    overhead["server_cpu_ms_per_request"] = (
                        stream_run["server_cpu_ms_per_request"] - plain_run["server_cpu_ms_per_request"]
                    )
                measurements[f"{kind}_streaming_overhead"] = overhead
            results[f"c{concurrency}"] = measurements
    return results


# ---- part 2: cancellation at the upstream


def metric(port: int, name: str) -> float:
    """One unlabelled sample of the server's /metrics, read with prometheus-client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and not sample.labels:
                return sample.value
    return 0.0


def cancelled_counts(port: int) -> tuple[float, float]:
    return metric(port, "agentbalance_cancelled_requests_total"), metric(port, "agentbalance_cancelled_calls_total")


async def ask_all(port: int, questions: list[str]) -> list[dict[str, Any]]:
    """Each question in full, all at once (one connection each): the response's `agentbalance` objects."""

    async def ask(question: str) -> dict[str, Any]:
        connection = await Connection.open(port)
        try:
            sent = time.perf_counter()
            status, body = await connection.post(CHAT, chat(question, False))
            if status != 200:
                raise RuntimeError(f"HTTP {status}: {body}")
            return body["agentbalance"] | {"client_wall_s": time.perf_counter() - sent}
        finally:
            await connection.close()

    return list(await asyncio.gather(*(ask(question) for question in questions)))


async def hang_up(port: int, question: str, stream: bool, after_s: float) -> tuple[float, float | None]:
    """Send a request, read whatever comes for `after_s` seconds, close the connection; returns the hang-up's
    perf_counter time and the seconds the first stream event took (None: nothing arrived)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(chat(question, stream)).encode()
    head = f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
    sent = time.perf_counter()
    await writer.drain()
    received, first = b"", None
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(after_s):
            while chunk := await reader.read(65536):
                received += chunk
                if first is None and b"data:" in received:
                    first = time.perf_counter() - sent
    writer.close()
    hung = time.perf_counter()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return hung, first


@dataclass
class Disconnect:
    """What one disconnected request (or the openai client's attempts at one question) left at the upstream."""

    started: int  # upstream requests that arrived for it
    abandoned: int  # of them, those whose caller hung up before the answer (dropped in flight)
    after_hang_up: int  # arrived after the (last) hang-up: calls a cancelled run should never start
    attempts: float  # requests the server saw cancelled
    calls_cut_short: float  # calls the server counted dropped in flight
    first_chunk_s: float | None = None
    client_s: float | None = None


def observed(upstream: LoopbackServer, port: int, quiet_s: float, disconnect: Any) -> Disconnect:
    """Run `disconnect()` (it returns the perf_counter time of its last hang-up, and optionally more), then wait
    until the upstream is quiet and count what arrived."""
    before, dropped = upstream.count(), upstream.abandoned
    cancelled_before, cut_before = cancelled_counts(port)
    hung, extra = disconnect()
    after = upstream.settled(quiet_s)
    arrived = upstream.requests[before:after]
    cancelled_after, cut_after = cancelled_counts(port)
    return Disconnect(
        started=after - before,
        abandoned=upstream.abandoned - dropped,
        after_hang_up=sum(request.received_at > hung for request in arrived),
        attempts=cancelled_after - cancelled_before,
        calls_cut_short=cut_after - cut_before,
        **extra,
    )


def summary(rows: list[Disconnect], whole: list[int], attempts_paid: int) -> dict[str, Any]:
    """Means over questions; `attempts_paid`: how many whole MAS a server that did not cancel would have run."""
    started = [row.started for row in rows]
    result: dict[str, Any] = {
        "disconnected_requests": sum(row.attempts for row in rows),
        "calls_started_per_question_mean": statistics.fmean(started),
        "calls_started_per_disconnected_request_mean": sum(started) / max(1.0, sum(row.attempts for row in rows)),
        "calls_a_non_cancelling_server_would_make_mean": attempts_paid * statistics.fmean(whole),
        "calls_saved_per_question_mean": statistics.fmean(
            attempts_paid * w - s for w, s in zip(whole, started, strict=True)
        ),
        "share_of_calls_saved": 1 - sum(started) / (attempts_paid * sum(whole)),
        "abandoned_at_upstream_per_question_mean": statistics.fmean(row.abandoned for row in rows),
        "calls_cut_short_by_server_per_question_mean": statistics.fmean(row.calls_cut_short for row in rows),
        "calls_started_after_hang_up_total": sum(row.after_hang_up for row in rows),
        "questions_with_every_started_call_abandoned": sum(row.abandoned == row.started for row in rows),
    }
    if attempts_paid == 1:
        result["calls_saved_per_disconnected_request_mean"] = result["calls_saved_per_question_mean"]
    firsts = [row.first_chunk_s for row in rows if row.first_chunk_s is not None]
    if firsts:
        result["first_chunk_before_hang_up"] = f"{len(firsts)} of {len(rows)}"
        result["first_chunk_ms_p50_max"] = [1000 * statistics.median(firsts), 1000 * max(firsts)]
    clients = [row.client_s for row in rows if row.client_s is not None]
    if clients:
        result["client_seconds_until_it_gave_up_mean"] = statistics.fmean(clients)
    return result


def disagreeing_on(questions: set[str]) -> Responder:
    """The fake's answers: the default (every backbone gives the same) except on `questions`, where each backbone
    gives its own number, so a MAS's "disagree" agent (a decision maker after its solvers) is called."""

    def respond(body: dict[str, Any]) -> str:
        prompt = " ".join(str(message.get("content", "")) for message in body.get("messages", []))
        if not any(question in prompt for question in questions):
            return default_responder(body)
        model = str(body.get("model", ""))
        return f"{model} works it out step by step. So the result is \\boxed{{{zlib.crc32(model.encode()) % 1000}}}."

    return respond


def cancellation_part(model: Path, questions: int, call_s: float, hang_up_s: float) -> dict[str, Any]:
    """Part 2: calls started per disconnected request at the loopback fake, against a whole MAS's calls."""
    import openai

    quiet_s = 2.5 * call_s
    texts = [q.render() for q in synthetic_split("test", 8 * questions, seed=23) if q.domain == "math"][:questions]
    assert len(texts) == questions, "too few math questions drawn"
    disagreeing = texts[1::2]
    with LoopbackServer(responder=disagreeing_on(set(disagreeing))) as upstream:
        upstream.schedule(lambda number, request: Fault(kind="slow", delay_s=call_s))
        live = ["--world", "live", "--base-url", upstream.base_url, "--no-cache"]
        with serving(model, live, os.environ | {"AGENTBALANCE_API_KEY": "anything"}) as (_, port):
            full = asyncio.run(ask_all(port, texts))
            upstream_full = upstream.settled(quiet_s)
            whole = [sum(agent["skipped"] is None for agent in answer["agents"]) for answer in full]
            first_step = [
                sum(agent["skipped"] is None and not agent["inputs"] for agent in answer["agents"]) for answer in full
            ]
            assert upstream_full == sum(whole), f"the fake saw {upstream_full} calls, the answers name {sum(whole)}"
            rows: dict[str, list[Disconnect]] = {"plain": [], "stream": [], "openai": []}
            for text in texts:
                for kind, stream in (("plain", False), ("stream", True)):

                    def raw(stream: bool = stream, text: str = text) -> tuple[float, dict[str, Any]]:
                        hung, first = asyncio.run(hang_up(port, text, stream, hang_up_s))
                        return hung, {"first_chunk_s": first} if stream else {}

                    rows[kind].append(observed(upstream, port, quiet_s, raw))

                def impatient(text: str = text) -> tuple[float, dict[str, Any]]:
                    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", timeout=hang_up_s)
                    started = time.perf_counter()
                    try:
                        client.chat.completions.create(
                            model="agentbalance", messages=[{"role": "user", "content": text}]
                        )
                    except openai.APITimeoutError:
                        pass
                    else:
                        raise RuntimeError("the openai client got an answer within its timeout")
                    finally:
                        client.close()
                    return time.perf_counter(), {"client_s": time.perf_counter() - started}

                rows["openai"].append(observed(upstream, port, quiet_s, impatient))
    attempts = [row.attempts for row in rows["openai"]]
    groups = {"agreeing": [i for i in range(questions) if i % 2 == 0], "disagreeing": list(range(1, questions, 2))}

    def summaries(kind: str, attempts_paid: int) -> dict[str, Any]:
        """Over every question, and over each half (the fake's backbones agreeing, disagreeing)."""
        result = summary(rows[kind], whole, attempts_paid)
        for group, chosen in groups.items():
            result[group] = summary([rows[kind][i] for i in chosen], [whole[i] for i in chosen], attempts_paid)
        return result

    return {
        "questions": questions,
        "upstream_call_s": call_s,
        "hang_up_after_s": hang_up_s,
        "whole_mas_calls_mean": statistics.fmean(whole),
        "whole_mas_calls_min_max": [min(whole), max(whole)],
        "first_step_calls_mean": statistics.fmean(first_step),
        "whole_mas_client_wall_s_mean": statistics.fmean(answer["client_wall_s"] for answer in full),
        "whole_mas_calls_mean_agreeing_disagreeing": [
            statistics.fmean(whole[i] for i in chosen) for chosen in groups.values()
        ],
        "plain": summaries("plain", 1),
        "stream": summaries("stream", 1),
        "openai_client": {"attempts_per_question_mean": statistics.fmean(attempts)} | summaries("openai", 3),
        "per_question": [
            {
                "backbones": "disagreeing" if i % 2 else "agreeing",
                "whole_mas_calls": w,
                "first_step_calls": f,
                **{kind: [rows[kind][i].started, rows[kind][i].abandoned] for kind in rows},
            }
            for i, (w, f) in enumerate(zip(whole, first_step, strict=True))
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="a run folder (default: build a small one)")
    parser.add_argument("--requests", type=int, default=200, help="requests per measurement at concurrency 1")
    parser.add_argument("--per-connection", type=int, default=10, help="requests per connection at concurrency 64")
    parser.add_argument("--questions", type=int, default=20, help="questions of the cancellation part")
    parser.add_argument("--call-s", type=float, default=1.0, help="seconds each upstream call takes (part 2)")
    parser.add_argument("--hang-up-s", type=float, default=0.5, help="seconds before the client hangs up (part 2)")
    args = parser.parse_args()
    model = ensure_model(args.model or DEFAULT_RUN)
    date = datetime.now(UTC).isoformat(timespec="seconds")
    load_before = os.getloadavg()
    started = time.perf_counter()
    streaming = streaming_part(model, args.requests, args.per_connection)
    load_between = os.getloadavg()
    cancellation = cancellation_part(model, args.questions, args.call_s, args.hang_up_s)
    command = ".venv/bin/python -m benchmarks.serve_streaming" + "".join(
        f" --{flag} {value}"
        for flag, value, default in (
            ("model", args.model, None),
            ("requests", args.requests, 200),
            ("per-connection", args.per_connection, 10),
            ("questions", args.questions, 20),
            ("call-s", args.call_s, 1.0),
            ("hang-up-s", args.hang_up_s, 0.5),
        )
        if value != default
    )
    document = {
        "command": command,
        "date": date,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}; client, server and (part 2) the upstream fake on the same cores, a machine "
        "shared with other work while this ran",
        "load_average_before_between_after": [
            [round(x, 2) for x in load] for load in (load_before, load_between, os.getloadavg())
        ],
        "seconds": round(time.perf_counter() - started, 1),
        "streaming": {
            "world": "simulated: agent calls answer at once, so LLM time is zero and the modelled latency is not slept",
            "what_is_measured": "client-side wall time per request on loopback keep-alive connections: plain "
            "requests to the whole JSON answer (total), streamed ones (stream_options.include_usage) to the first "
            "event, the role chunk (first_chunk), and to `data: [DONE]` (done); fresh: questions the server has "
            "not embedded, a disjoint set of the same size for plain and stream; repeated: the plain set again, "
            "both ways; server_cpu_ms_per_request: the server process's CPU time over the requests (/proc)",
            "results": streaming,
        },
        "cancellation": {
            "world": "live, in front of tests/loopback_server.py (every call answers after upstream_call_s), "
            "--no-cache; math questions; on every other one (`disagreeing`) each backbone answers its own "
            "number, so a MAS's conditional decision maker runs as a second step, on the rest (`agreeing`) the "
            "fake's default answer, the same for every backbone, so it is skipped; each question asked in full "
            "first (all at once), then, one question at a time, sent plain and hung up on, streamed and hung up "
            "on, and asked by the openai client (timeout = hang_up_after_s, default max_retries 2); after each, "
            "the fake's count is read once nothing has arrived for 2.5 x upstream_call_s",
            "what_is_measured": "calls started: upstream requests that arrived at the fake for the disconnected "
            "request(s); abandoned: of them, those the fake saw the caller hang up on before answering; saved: "
            "calls a server that ran every request to the end would have made (a whole MAS per request, 3 for "
            "the openai client's attempts) minus the calls started; calls_started_after_hang_up: arrivals later "
            "than the client's (last) hang-up; per_question: whole MAS calls, first-step calls, [started, "
            "abandoned] per way of disconnecting",
            "results": cancellation,
        },
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serve-streaming.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
