"""A client that leaves cancels its MAS run, counted where it is paid: at the upstream (the loopback fake, which
records every request as it arrives and notices a caller that hung up before the answer). Bodies are limited
whether or not they declare a length. Real clients and raw sockets over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.serve import ServeOptions, ServerThread, create_app
from agentbalance.worlds.simulated import SimulatedWorld
from tests.loopback_server import Fault, LoopbackServer
from tests.serving import QUESTION, USER, client, live_world, post, served

SLOW_S = 0.8  # each upstream call's time: long enough for a client to give up in the middle of a MAS
QUIET_S = 2.5 * SLOW_S  # no new upstream request for this long: the server's work on a request has stopped


def metric(url: str, name: str, **labels: str) -> float:
    """One sample of the server's /metrics, read with prometheus-client's own parser."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    with sock:
        sock.sendall(f"GET /metrics HTTP/1.1\r\nHost: {parts.hostname}\r\nConnection: close\r\n\r\n".encode())
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    text = raw.split(b"\r\n\r\n", 1)[1].decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def send_and_hang_up(url: str, body: dict, after_s: float) -> None:
    """Send a request, wait `after_s` seconds for nothing, then close the connection (a client that gave up)."""
    parts = urlsplit(url)
    data = json.dumps(body).encode()
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    time.sleep(after_s)
    sock.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_cancels_its_run_no_call_starts_after_and_the_ones_in_flight_are_dropped(
    trained_run: Path, encoder: TextEncoder, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"model": "agentbalance", "messages": [USER], "stream": stream}
    with LoopbackServer() as upstream:
        upstream.schedule(lambda number, request: Fault(kind="slow", delay_s=SLOW_S))
        with ServerThread(create_app(served(trained_run, live_world(upstream, timeout_s=30.0), encoder))) as url:
            full = client(url).chat.completions.create(model="agentbalance", messages=[USER])
            calls = len([a for a in full.model_extra["agentbalance"]["agents"] if a["skipped"] is None])
            before = upstream.settled(QUIET_S)
            assert calls >= 2 and before == calls  # a MAS of several calls, in more than one step
            access = logging.getLogger("agentbalance.serve.access")  # the server's logging does not propagate,
            access.addHandler(caplog.handler)  # and a ServerThread's level (warning) hides the access lines
            level = access.level
            access.setLevel(logging.INFO)
            try:
                send_and_hang_up(url, body | {"messages": [{"role": "user", "content": "What is 19 * 21?"}]}, 0.3)
                after = upstream.settled(QUIET_S)
            finally:
                access.removeHandler(caplog.handler)
                access.setLevel(level)
            cancelled = metric(url, "agentbalance_cancelled_requests_total")
            cut_short = metric(url, "agentbalance_cancelled_calls_total")
    started = after - before
    assert 1 <= started < calls  # the first step's calls started; none after the client left
    assert upstream.abandoned == started  # and each was dropped in flight: its answer was never read
    assert cancelled == 1 and cut_short == started
    lines = [json.loads(record.getMessage()) for record in caplog.records if record.name.endswith("access")]
    assert [line["status"] for line in lines] == [499] and lines[0]["cancelled"] and lines[0]["stream"] is stream


def test_an_openai_client_that_times_out_and_retries_pays_for_no_whole_mas_it_never_reads(
    trained_run: Path, encoder: TextEncoder
) -> None:
    """The `openai` client's default behaviour: a timeout, then two retries. Each attempt is cancelled when its
    connection closes, so the three attempts start only their MAS's first step each, where a server that ran on
    would have paid for three whole MAS."""
    question = [{"role": "user", "content": "What is 7 * 8?"}]
    with LoopbackServer() as upstream:
        upstream.schedule(lambda number, request: Fault(kind="slow", delay_s=SLOW_S))
        with ServerThread(create_app(served(trained_run, live_world(upstream, timeout_s=30.0), encoder))) as url:
            full = client(url).chat.completions.create(model="agentbalance", messages=question)
            calls = len([a for a in full.model_extra["agentbalance"]["agents"] if a["skipped"] is None])
            before, dropped = upstream.settled(QUIET_S), upstream.abandoned
            impatient = openai.OpenAI(base_url=url, api_key="unused", timeout=0.4, max_retries=2)
            with pytest.raises(openai.APITimeoutError):
                impatient.chat.completions.create(model="agentbalance", messages=question)
            started = upstream.settled(QUIET_S) - before
            attempts = metric(url, "agentbalance_cancelled_requests_total")
    assert attempts == 3 and 3 <= started < 3 * calls
    assert upstream.abandoned - dropped == started  # every call started was dropped in flight


def test_a_chunked_body_over_the_limit_is_refused_without_being_held(trained_run: Path, encoder: TextEncoder) -> None:
    """A body sent without a Content-Length (chunked) is counted as it arrives: past 1 MiB, a 413 at once."""
    model = served(trained_run, SimulatedWorld(Catalog.load(), seed=0), encoder)
    with ServerThread(create_app(model, ServeOptions())) as url:
        parts = urlsplit(url)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        with sock:
            sock.sendall(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n".encode()
            )
            chunk = b"x" * 65536
            sent = 0
            try:
                for _ in range(64):  # up to 4 MiB, the size that was once accepted
                    sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                    sent += len(chunk)
            except OSError:
                pass  # the server answered and closed while we were still sending
            answer = b""
            while b"}}" not in answer and (data := sock.recv(65536)):  # the error object's end, or the close
                answer += data
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"sent without a Content-Length" in answer
        small = json.dumps({"model": "agentbalance", "messages": [{"role": "user", "content": QUESTION}]}).encode()
        status, reply = post(url, small)
        assert status == 200 and reply["choices"][0]["message"]["content"]
