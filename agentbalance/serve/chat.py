"""POST /v1/chat/completions: one request's life from an admitted question to its answer, streamed or not, and
what it leaves behind (spend, metrics, the governor's window, a JSON access line).

It never puts a key, a question or a traceback in a response or a log line, and never lets a request run on (or
pay for calls) after its client has gone.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from sse_starlette import EventSourceResponse

from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.runtime.runner import Runner, RunProgress
from agentbalance.runtime.trace import Trace
from agentbalance.serve.batching import ConstructionBatcher
from agentbalance.serve.governor import BudgetGovernor
from agentbalance.serve.lifecycle import Admission, ClientGone, Drain, until_disconnected
from agentbalance.serve.metrics import ServeMetrics
from agentbalance.serve.model import ConstructionPoint, ServedModel
from agentbalance.serve.protocol import (
    Asked,
    ProtocolError,
    answer_pieces,
    answer_text,
    chunk_body,
    completion_body,
    details_of,
    finish_reason,
    unanswered,
    usage_of,
)
from agentbalance.serve.spending import SpendLedger
from agentbalance.serve.traffic_log import TrafficLog, served_record
from agentbalance.worlds.base import TextSink

log = logging.getLogger("agentbalance.serve")
access_log = logging.getLogger("agentbalance.serve.access")
PING_S = 15.0  # a comment line on an idle stream this often, so proxies do not close it while the MAS runs
CLIENT_CLOSED = 499  # the status an access line gives a request whose client left (nginx's convention)


@dataclass
class ServedRequest:
    """One admitted request: what it asks, where it is served, and what it has done so far."""

    asked: Asked
    query: Query
    budget: Budget | None  # the budget it names, else the server's (None: the model's own)
    served: Budget  # the budget that stands for it (the governor's window measures against it)
    model_name: str  # the model name the client asked for, echoed in the response
    key_id: str  # who pays: a digest of the client's key, never the key
    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created: int = field(default_factory=lambda: int(time.time()))
    started: float = field(default_factory=time.perf_counter)
    progress: RunProgress = field(default_factory=RunProgress)
    point: ConstructionPoint | None = None


@dataclass
class ChatHandler:
    """Everything one app's requests share: the model, its runner and batcher, the slots and the drain, the
    governor, the spend ledger and the metrics."""

    model: ServedModel
    runner: Runner
    batcher: ConstructionBatcher[ConstructionPoint]
    admission: Admission
    drain: Drain
    calls: asyncio.Semaphore  # LLM calls in flight, across requests
    metrics: ServeMetrics
    governor: BudgetGovernor | None = None
    ledger: SpendLedger | None = None
    traffic: TrafficLog | None = None  # `serve --log-dir`: every answered request written down

    def admit(self, request: ServedRequest) -> None:
        """Refusals that must come before any work (and before a stream's 200): shutdown, full slots, spend."""
        self.drain.check()
        self.admission.check()
        if self.ledger is not None:
            allowed, retry_s = self.ledger.allowed(request.key_id)
            if not allowed:
                raise ProtocolError(
                    429,
                    f"this key has spent its {self.ledger.max_usd_per_day:g} USD for today (UTC); the limit resets "
                    f"in {retry_s:.0f} s",
                    kind="rate_limit_error",
                    code="spend_limit_reached",
                    headers={"Retry-After": str(max(1, int(retry_s + 0.999)))},
                )

    async def serve(
        self, request: ServedRequest, stream: bool = False, sink: TextSink | None = None
    ) -> tuple[MAS, Trace, dict[str, Any]]:
        """Build, run and account for one admitted request, without HTTP (`complete` and `stream` wrap it; a program
        that embeds the server, or a benchmark, may call it with its own queries): the MAS, its trace, and what the
        response's `agentbalance` object adds. `sink` receives the decision agent's text as a live world streams it.
        Refusals raise ProtocolError."""
        mas, trace = await self.drain.run(self._answer(request, sink))
        return mas, trace, self._settle(request, trace, mas, 200, stream)

    async def complete(self, request: ServedRequest, http: Request) -> Response:
        """A non-streamed answer; the run is cancelled when the client disconnects before it."""
        try:
            mas, trace, extra = await until_disconnected(http, self.serve(request))
        except ClientGone:
            self._cancelled(request)
            return Response(status_code=CLIENT_CLOSED)  # nobody reads it: the client has gone
        except ProtocolError as error:
            self._refused(request, error)
            raise
        body = completion_body(trace, mas, request.served, request.model_name, request.trace_id, request.created, extra)
        return JSONResponse(body)

    def stream(self, request: ServedRequest) -> EventSourceResponse:
        """Server-sent events in OpenAI's chunk format: the role at once, then the answer's content in pieces, a
        last chunk with the finish reason (and usage with `agentbalance` when asked), then `[DONE]`. An error
        after the stream began is an error event, then `[DONE]`; a client that leaves cancels the run."""
        return EventSourceResponse(self._events(request), ping=PING_S, sep="\n")

    async def _events(self, request: ServedRequest) -> AsyncIterator[dict[str, str]]:
        def event(body: dict[str, Any] | str) -> dict[str, str]:
            return {"data": body if isinstance(body, str) else json.dumps(body)}

        ids = (request.trace_id, request.model_name, request.created)
        usage_field = {"usage": None} if request.asked.include_usage else {}
        yield event(chunk_body(*ids, {"role": "assistant", "content": ""}, **usage_field))
        pieces: asyncio.Queue[str] = asyncio.Queue()
        streamed: list[str] = []
        run = asyncio.ensure_future(self.serve(request, stream=True, sink=pieces.put_nowait))
        try:
            while not run.done() or not pieces.empty():  # the decision agent's text as a live world streams it
                if pieces.empty():
                    arrived = asyncio.ensure_future(pieces.get())
                    await asyncio.wait({run, arrived}, return_when=asyncio.FIRST_COMPLETED)
                    if not arrived.done():
                        arrived.cancel()
                        continue
                    piece = arrived.result()
                else:
                    piece = pieces.get_nowait()
                streamed.append(piece)
                yield event(chunk_body(*ids, {"content": piece}, **usage_field))
            mas, trace, extra = run.result()
        except asyncio.CancelledError:  # the client left (sse-starlette cancels the stream): so does the run
            run.cancel()
            self._cancelled(request)
            raise
        except ProtocolError as error:
            self._refused(request, error, stream=True)
            yield event(error.body())
            yield event("[DONE]")
            return
        except Exception as error:  # a bug: an error event, never a hang (the log has the traceback)
            log.error("trace %s: the stream failed: %s", request.trace_id, type(error).__name__, exc_info=error)
            self.metrics.status(500, True)
            yield event(ProtocolError(500, "internal server error; the server's log has the details",
                                      kind="server_error").body())  # fmt: skip
            yield event("[DONE]")
            return
        if not streamed:  # nothing streamed as it came (the simulator, a skipped decision agent): the finished text
            for piece in answer_pieces(answer_text(trace)):
                yield event(chunk_body(*ids, {"content": piece}, **usage_field))
        details = details_of(trace, mas, request.served, request.trace_id) | extra
        if request.asked.include_usage:
            yield event(chunk_body(*ids, {}, finish_reason(trace), usage=None))
            last = chunk_body(*ids, {}, usage=usage_of(trace), agentbalance=details)
            last["choices"] = []
            yield event(last)
        else:
            yield event(chunk_body(*ids, {}, finish_reason(trace), agentbalance=details))
        yield event("[DONE]")

    async def _answer(self, request: ServedRequest, sink: TextSink | None = None) -> tuple[MAS, Trace]:
        """Build and run the request's MAS in a slot; a world's refusal is a 502, an unanswered MAS too, and so is a
        decision agent whose streamed answer broke off (its client has part of an answer, and no other follows)."""
        passed: list[str] = []

        def passing(piece: str) -> None:
            passed.append(piece)
            if sink is not None:
                sink(piece)

        async with self.admission.slot():
            self.metrics.in_flight.inc()
            try:
                request.point = self._point(request)
                try:
                    mas = await self.batcher.construct(request.query, request.point)
                except AgentBalanceError as error:
                    raise ProtocolError(400, str(error)) from None
                self.model.check_fits(mas, request.query)
                stream = passing if sink is not None else None
                try:
                    trace = await self.runner.run(mas, request.query, self.calls, request.progress, stream)
                except AgentBalanceError as error:  # the world refused: key, model, endpoint (never a key in it)
                    raise ProtocolError(502, f"upstream: {error}", kind="upstream_error") from None
            finally:
                self.metrics.in_flight.dec()
        failed = unanswered(trace)
        decision = next((agent for agent in trace.agents if agent.id == mas.decision), None)
        if failed is None and passed and decision is not None and decision.error is not None:
            failed = f"upstream: the answer broke off after it began streaming ({decision.id}: {decision.error})"
        if failed is not None:
            self._charge(request, trace.cost_usd)  # the failed calls' prompts were paid
            self.metrics.answered(trace, time.perf_counter() - request.started)
            raise ProtocolError(502, failed, kind="upstream_error")
        return mas, trace

    def _point(self, request: ServedRequest) -> ConstructionPoint:
        """Where this request's MAS is built: the governor's current tightening of its budget, if it governs."""
        if self.governor is None:
            return ConstructionPoint(request.budget)
        return self.model.construction_point(request.budget, self.governor.operating_point())

    def _settle(self, request: ServedRequest, trace: Trace, mas: MAS, status: int, stream: bool = False) -> dict:
        """Account for an answered request: spend, governor, metrics, the access line; returns what the response's
        `agentbalance` object adds (the governor's state and the operating point)."""
        wall_s = time.perf_counter() - request.started
        self._charge(request, trace.cost_usd)
        self.metrics.answered(trace, wall_s)
        self.metrics.status(status, stream)
        extra: dict[str, Any] = {}
        if self.governor is not None:
            self.governor.record(trace.cost_usd, trace.latency_s, request.served)
            state = self.governor.state()
            self.metrics.governed(state)
            extra["governor"] = state
        if request.point is not None:
            extra["operating_point"] = request.point.describe()
        self._access(request, status, stream, trace=trace, wall_s=wall_s, agents=len(mas.agents))
        if self.traffic is not None:
            self.traffic.write(
                served_record(
                    request.trace_id, request.created, request.model_name, request.served, request.query, mas, trace
                )
            )
        return extra

    def _cancelled(self, request: ServedRequest) -> None:
        """A run cut short by its client's disconnect: what its finished calls cost is still paid and counted."""
        progress = request.progress
        self._charge(request, progress.cost_usd)
        self.metrics.cancelled_run(progress.cost_usd, progress.in_flight)
        self.metrics.status(CLIENT_CLOSED, request.asked.stream)
        self._access(request, CLIENT_CLOSED, request.asked.stream, cancelled=True)

    def _refused(self, request: ServedRequest, error: ProtocolError, stream: bool = False) -> None:
        """An admitted request refused while it ran (counted by the app's error handler, or here in a stream)."""
        if stream:
            self.metrics.status(error.status, stream)
        self._access(request, error.status, stream, error=error.message if error.status >= 500 else None)

    def _charge(self, request: ServedRequest, usd: float) -> None:
        if self.ledger is not None and usd > 0:
            self.ledger.charge(request.key_id, usd)

    def _access(
        self,
        request: ServedRequest,
        status: int,
        stream: bool,
        *,
        trace: Trace | None = None,
        wall_s: float | None = None,
        agents: int | None = None,
        cancelled: bool = False,
        error: str | None = None,
    ) -> None:
        """One JSON line per request: who (a key digest), what status, what it cost; never the question or a key."""
        progress = request.progress
        line: dict[str, Any] = {
            "event": "chat.completion",
            "trace_id": request.trace_id,
            "status": status,
            "stream": stream,
            "model": request.model_name,
            "key": request.key_id,
            "budget": {"tok": request.served.tok, "lat": request.served.lat},
            "wall_s": round(wall_s if wall_s is not None else time.perf_counter() - request.started, 4),
            "calls": progress.finished,
        }
        if trace is not None:
            line |= {
                "cost_usd": trace.cost_usd,
                "latency_s": trace.latency_s,
                "agents": agents,
                "skipped": sum(a.skipped is not None for a in trace.agents),
                "escalated": sum(a.escalated for a in trace.agents),
                "failed": trace.failures,
                "correct": trace.correct,
                "score": trace.score,
            }
        if cancelled:
            line |= {"cancelled": True, "cost_usd": progress.cost_usd, "calls_cut_short": progress.in_flight}
        if error is not None:
            line["error"] = error
        access_log.info(json.dumps(line))
