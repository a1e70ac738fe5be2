"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for tests, scriptable to misbehave.

It must never be reachable from outside the machine (it binds 127.0.0.1 only) and never needs a network.

Usage:

    with LoopbackServer(api_keys={"sk-test"}) as server:
        server.fail(Fault(status=429, retry_after="1"), times=2)   # the next 2 requests get 429
        world = LiveWorld(catalog, base_url=server.base_url, api_key="sk-test")
        ...
        assert len(server.requests) == 3

Every request is recorded (path, headers, JSON body, the response sent), so tests can assert what
reached the wire. Faults are consumed in order: a model's own queue first, then the shared queue;
`always` faults apply to every request for a model; when none applies, a `schedule` (a function of
the request's number and body, e.g. `random_schedule(rate=0.05, ...)`) may still pick one.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FaultKind = Literal[
    "status", "malformed", "empty_choices", "no_usage", "drop", "reset", "truncated", "slow", "broken_stream"
]
Responder = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour of a single request.

    status: an HTTP error (429, 500, 503, 401, 404, ...) with an OpenAI-style error body;
    malformed: HTTP 200 with a body that is not JSON; empty_choices: 200 with `choices: []`;
    no_usage: 200 without `usage`; drop: close the connection without answering (FIN);
    reset: abort the connection with a TCP RST (ECONNRESET at the client);
    truncated: send the 200 headers and half the body, then reset the connection;
    slow: a normal answer after `delay_s` (a timeout when it exceeds the client's);
    broken_stream: a streamed request gets its first two pieces, then a reset connection.
    Every kind waits `delay_s` first, so "a 500 after 2 s" is `Fault(status=500, delay_s=2)`.
    """

    kind: FaultKind = "status"
    status: int = 500
    retry_after: str | None = None
    delay_s: float = 0.0
    message: str = "scripted failure"


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received, and what it answered (status, and the JSON body when it sent one)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw_body: bytes
    received_at: float
    status: int = 0
    response: dict[str, Any] | None = None
    fault: Fault | None = None  # the scripted misbehaviour, None for a prompt normal answer

    @property
    def model(self) -> str | None:
        return self.body.get("model") if self.body else None

    @property
    def answered(self) -> bool:
        """Whether the client got a usable completion (HTTP 200 with choices), i.e. a paid answer."""
        return self.status == 200 and bool(self.response and self.response.get("choices"))


Schedule = Callable[[int, dict[str, Any]], Fault | None]
"""Picks the fault of a request from its number (0-based, in arrival order) and JSON body; None: answer normally."""


def random_schedule(
    rate: float,
    faults: Sequence[Fault],
    seed: int = 0,
    delay_s: tuple[float, float] = (0.0, 0.0),
) -> Schedule:
    """A fault from `faults` (uniformly) for a fraction `rate` of requests, else a normal answer after a random
    delay in `delay_s`; reproducible from `seed` for a given arrival order (its own generator, under a lock)."""
    if not 0 <= rate <= 1 or (rate > 0 and not faults):
        raise ValueError(f"random_schedule: rate {rate} needs 0 <= rate <= 1 and at least one fault")
    rng = random.Random(seed)
    lock = threading.Lock()

    def pick(number: int, body: dict[str, Any]) -> Fault | None:
        with lock:
            faulty = rng.random() < rate
            fault = rng.choice(list(faults)) if faulty else None
            delay = rng.uniform(*delay_s)
        if fault is not None:
            return fault
        return Fault(kind="slow", delay_s=delay) if delay > 0 else None

    return pick


def default_responder(body: dict[str, Any]) -> str:
    """A deterministic answer: a boxed number for math-looking prompts, else a letter."""
    model = str(body.get("model", ""))
    last = str(body.get("messages", [{}])[-1].get("content", ""))
    if "(A)" in last:
        return f"{model} thinks it through.\nAnswer: B"
    return f"{model} works it out step by step. So the result is \\boxed{{4}}."


def usage_of(body: dict[str, Any], text: str, reasoning_tokens: int) -> dict[str, Any]:
    """The usage a well-behaved endpoint reports: characters / 4 of the prompt and the answer, plus reasoning."""
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt_tokens = prompt_chars // 4 + 7
    completion_tokens = len(text) // 4 + 1 + reasoning_tokens
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }


@dataclass
class LoopbackServer:
    """A threaded HTTP server speaking POST /v1/chat/completions; start with `with` or `start()`."""

    api_keys: set[str] | None = None  # None: any key (or none) is accepted
    models: set[str] | None = None  # None: every model is known
    reasoning_tokens: dict[str, int] = field(default_factory=dict)  # per model; default 0
    responder: Responder = default_responder
    requests: list[RecordedRequest] = field(default_factory=list)
    in_flight: int = 0  # requests being handled now
    abandoned: int = 0  # requests whose client closed the connection before the answer was sent (it gave up)
    stream_gap_s: float = 0.0  # a streamed answer's pause between its pieces
    max_in_flight: int = 0  # the most handled at once: what a client's concurrency limit allowed
    _queue: list[Fault] = field(default_factory=list)
    _model_queues: dict[str, list[Fault]] = field(default_factory=dict)
    _always: dict[str, Fault] = field(default_factory=dict)
    _schedule: Schedule | None = None
    _arrivals: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self) -> LoopbackServer:
        server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # ---- scripting

    def fail(self, fault: Fault, times: int = 1, model: str | None = None) -> None:
        """The next `times` requests (for `model`, or any model) get `fault`."""
        with self._lock:
            queue = self._queue if model is None else self._model_queues.setdefault(model, [])
            queue.extend([fault] * times)

    def always(self, model: str, fault: Fault | None) -> None:
        """Every request for `model` gets `fault` (None removes it)."""
        with self._lock:
            if fault is None:
                self._always.pop(model, None)
            else:
                self._always[model] = fault

    def schedule(self, schedule: Schedule | None) -> None:
        """Consult `schedule` for every request no queued or `always` fault claims (None removes it)."""
        with self._lock:
            self._schedule = schedule

    def requests_for(self, model: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.model == model]

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def settled(self, quiet_s: float) -> int:
        """The request count once nothing new has arrived for `quiet_s` seconds (a caller's work has stopped)."""
        count, since = self.count(), time.monotonic()
        while time.monotonic() - since < quiet_s:
            time.sleep(0.05)
            if self.count() != count:
                count, since = self.count(), time.monotonic()
        return count

    def _next_fault(self, model: str | None, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            number, self._arrivals = self._arrivals, self._arrivals + 1
            if model is not None and model in self._always:
                return self._always[model]
            if model is not None and self._model_queues.get(model):
                return self._model_queues[model].pop(0)
            if self._queue:
                return self._queue.pop(0)
            schedule = self._schedule
        return schedule(number, body) if schedule is not None else None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def completion_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The normal 200 answer to `body`."""
        model = str(body.get("model", ""))
        text = self.responder(body)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage_of(body, text, self.reasoning_tokens.get(model, 0)),
        }


class _QuietServer(ThreadingHTTPServer):
    """Clients that drop a connection (timeouts, the `drop` fault) are expected here, not worth a traceback."""

    daemon_threads = True
    request_queue_size = (
        256  # the listen backlog: socketserver's 5 drops SYNs (a 1 s stall) when many clients connect at once
    )

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def _handler_for(server_state: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # TCP_NODELAY: headers and body go in two writes; with Nagle on, the
        # body waits for the client's delayed ACK of the headers (40 ms per request on Linux loopback)

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

        def do_POST(self) -> None:
            with server_state._lock:
                server_state.in_flight += 1
                server_state.max_in_flight = max(server_state.max_in_flight, server_state.in_flight)
            try:
                self._handle()
            finally:
                with server_state._lock:
                    server_state.in_flight -= 1

        def _handle(self) -> None:
            received = time.perf_counter()
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}

            fault: Fault | None = None

            def record(status: int, response: dict[str, Any] | None) -> None:
                """Record the request as it arrives (its answer is decided), then wait the fault's delay."""
                server_state._record(RecordedRequest(self.path, headers, body, raw, received, status, response, fault))
                if fault is not None and fault.delay_s > 0:
                    time.sleep(fault.delay_s)

            if not self.path.rstrip("/").endswith("/chat/completions") or body is None:
                record(404, None)
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            key = headers.get("authorization", "").removeprefix("Bearer ").strip()
            if server_state.api_keys is not None and key not in server_state.api_keys:
                # like real APIs, the message echoes the offending key: the client must never repeat it
                error = {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}}
                record(401, error)
                self._send(401, error)
                return
            model = body.get("model")
            if server_state.models is not None and model not in server_state.models:
                error = {
                    "error": {
                        "message": f"The model `{model}` does not exist",
                        "type": "invalid_request_error",
                        "code": "model_not_found",
                    }
                }
                record(404, error)
                self._send(404, error)
                return

            fault = server_state._next_fault(model, body)
            if fault is None or fault.kind == "slow":
                response = server_state.completion_body(body)
                record(200, response)
                if self._client_gone():
                    with server_state._lock:
                        server_state.abandoned += 1
                    self.close_connection = True
                    return
                with contextlib.suppress(OSError):  # a slow answer's client may have given up first
                    if body.get("stream"):
                        self._send_stream(body, response)
                    else:
                        self._send(200, response)
            elif fault.kind == "broken_stream":
                response = server_state.completion_body(body)
                record(200, response)
                self._send_stream(body, response, pieces=2)
                self._reset()
            elif fault.kind == "status":
                error = {"error": {"message": fault.message, "type": "server_error", "code": None}}
                record(fault.status, error)
                extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
                self._send(fault.status, error, extra)
            elif fault.kind == "malformed":
                record(200, None)
                self._send_raw(200, b'{"id": "chatcmpl-x", "choices": [ {"message": ', "application/json")
            elif fault.kind == "empty_choices":
                response = server_state.completion_body(body)
                response["choices"] = []
                record(200, response)
                self._send(200, response)
            elif fault.kind == "no_usage":
                response = server_state.completion_body(body)
                del response["usage"]
                record(200, response)
                self._send(200, response)
            elif fault.kind == "drop":
                record(0, None)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif fault.kind == "reset":
                record(0, None)
                self._reset()
            elif fault.kind == "truncated":
                record(0, None)
                data = json.dumps(server_state.completion_body(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self._reset()

        def _send_stream(self, body: dict[str, Any], response: dict[str, Any], pieces: int | None = None) -> None:
            """The answer as server-sent events, a word a chunk (`stream_gap_s` apart), the usage last when asked,
            then `[DONE]`; or only its first `pieces` chunks."""
            text = response["choices"][0]["message"]["content"]
            words = re.findall(r"\s*\S+\s*", text) or [text]
            base = {k: response[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

            def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
                choice = {"index": 0, "delta": delta, "finish_reason": finish}
                return b"data: " + json.dumps(base | {"choices": [choice]} | extra).encode() + b"\n\n"

            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for number, word in enumerate(words[:pieces] if pieces is not None else words):
                delta = {"role": "assistant", "content": word} if number == 0 else {"content": word}
                self.wfile.write(chunk(delta))
                self.wfile.flush()
                time.sleep(server_state.stream_gap_s)
            if pieces is not None:
                return
            self.wfile.write(chunk({}, "stop"))
            if (body.get("stream_options") or {}).get("include_usage"):
                self.wfile.write(b"data: " + json.dumps(base | {"choices": [], "usage": response["usage"]}).encode())
                self.wfile.write(b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _client_gone(self) -> bool:
            """Whether the client closed its side of the connection (an end of stream is waiting to be read)."""
            try:
                return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                return True

        def _reset(self) -> None:
            """Abort the connection: SO_LINGER 0 makes close() send a TCP RST instead of a FIN."""
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

        def _send(self, status: int, payload: dict[str, Any], extra_headers: dict[str, str] | None = None) -> None:
            self._send_raw(status, json.dumps(payload).encode(), "application/json", extra_headers)

        def _send_raw(
            self, status: int, data: bytes, content_type: str, extra_headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra_headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
