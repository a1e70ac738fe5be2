"""The ASGI app of `agentbalance serve`: a trained controller's MAS as one OpenAI-compatible model.

POST /v1/chat/completions (plain or streamed), GET /v1/models, GET /health, GET /metrics. It never trains, never
reads a run folder itself (the ServedModel goes through TrainedController), and never puts a key or a traceback in
a response or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from agentbalance.agreement import FREE_TEXT_THRESHOLD
from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError
from agentbalance.runtime.execution import Caps
from agentbalance.serve.batching import ConstructionBatcher
from agentbalance.serve.chat import ChatHandler, ServedRequest
from agentbalance.serve.governor import BudgetGovernor
from agentbalance.serve.lifecycle import Admission, BodyLimit, Drain
from agentbalance.serve.metrics import ServeMetrics
from agentbalance.serve.model import ServedModel
from agentbalance.serve.protocol import SERVED_MODEL, ChatRequest, ProtocolError, error_body, read_request
from agentbalance.serve.spending import SpendLedger, key_id
from agentbalance.serve.traffic_log import TrafficLog

log = logging.getLogger("agentbalance.serve")
MAX_BODY_BYTES = 1 << 20  # 1 MiB: a question and its conversation, not a corpus
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class ServeOptions:
    """How the server admits, runs and answers requests.

    `max_requests` run at once (constructing and executing their MAS) and up to `max_waiting` more wait for a
    slot; a request beyond both is answered 503 at once. `concurrency` bounds the LLM calls in flight across
    all requests. `budget` is served to requests that name none (None: the model's own). `api_keys`: the bearer
    tokens clients may send (none: no auth). After SIGTERM, in-flight requests get `grace_s` seconds to finish,
    then fail with a 503 that says so. `budget_window` (requests; None: off) turns on the budget governor;
    `max_usd_per_day` caps each key's spend per UTC day, kept in the sqlite file `spend_db`. `log_dir` (None: off)
    keeps every answered request in `log_dir`/requests.jsonl (`serve.traffic_log`). Free-text replies agree (a
    conditional agent is skipped) from the encoder's cosine `agreement_threshold` (1.0: only the same text).
    """

    name: str = SERVED_MODEL
    max_requests: int = 64
    max_waiting: int = 256
    concurrency: int = 32
    caps: Caps = field(default_factory=Caps)
    budget: Budget | None = None
    api_keys: tuple[str, ...] = field(default=(), repr=False)
    grace_s: float = 30.0
    budget_window: int | None = None
    max_usd_per_day: float | None = None
    spend_db: Path | None = None
    log_dir: Path | None = None
    agreement_threshold: float = FREE_TEXT_THRESHOLD

    def __post_init__(self) -> None:
        if self.max_requests < 1 or self.max_waiting < 0:
            raise AgentBalanceError(
                f"serve: --max-requests must be at least 1 and --max-waiting at least 0, got "
                f"{self.max_requests} and {self.max_waiting}"
            )
        if not self.grace_s >= 0:
            raise AgentBalanceError(f"serve: --grace must be 0 or more seconds, got {self.grace_s}")
        if any(not key.strip() for key in self.api_keys):
            raise AgentBalanceError("serve: a server API key is empty")
        if self.budget_window is not None and self.budget_window < 2:
            raise AgentBalanceError(f"serve: --budget-window must be at least 2 requests, got {self.budget_window}")
        if self.max_usd_per_day is not None and self.spend_db is None:
            raise AgentBalanceError("serve: --max-usd-per-day needs a file to keep the day's spend in (--spend-db)")
        if not 0.0 <= self.agreement_threshold <= 1.0:
            raise AgentBalanceError(f"serve: --agreement-threshold must be in [0, 1], got {self.agreement_threshold}")


def create_app(model: ServedModel, options: ServeOptions | None = None) -> FastAPI:
    """The app serving `model`. Its lifespan binds the drain to the event loop and, at shutdown, stops its
    construction worker and closes the world's HTTP clients of that loop."""
    options = options or ServeOptions()
    handler = ChatHandler(
        model=model,
        runner=model.runner(options.caps, options.concurrency, options.agreement_threshold),
        batcher=ConstructionBatcher(model.construct_many),
        admission=Admission(options.max_requests, options.max_waiting),
        drain=Drain(options.grace_s),
        calls=asyncio.Semaphore(options.concurrency),
        metrics=ServeMetrics(),
        governor=BudgetGovernor(options.budget_window) if options.budget_window is not None else None,
        ledger=SpendLedger(options.spend_db, options.max_usd_per_day)
        if options.max_usd_per_day is not None and options.spend_db is not None
        else None,
        traffic=TrafficLog(options.log_dir) if options.log_dir is not None else None,
    )
    drain, started = handler.drain, int(time.time())

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        drain.bind(asyncio.get_running_loop())
        try:
            yield
        finally:
            await handler.batcher.aclose()
            if handler.traffic is not None:
                handler.traffic.close()
            close = getattr(model.world, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # closing must never hide the shutdown's own outcome
                    await close()

    app = FastAPI(title="agentbalance", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.state.drain = drain
    app.state.admission = handler.admission
    app.state.batcher = handler.batcher
    app.state.handler = handler
    _error_handlers(app, handler.metrics)
    keys = [key.encode() for key in options.api_keys]

    def client_key(request: Request) -> str:
        """The digest of the key a request was sent with (a 401 without a right one, when the server has keys)."""
        if not keys:
            return key_id(None)
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        sent = token.strip().encode()
        matched = [key for key in keys if hmac.compare_digest(sent, key)]  # every key compared: constant time
        if scheme.lower() != "bearer" or not matched:
            raise ProtocolError(
                401,
                "missing or wrong API key: send the key of the server's --api-key-file as 'Authorization: Bearer KEY'",
                code="invalid_api_key",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return key_id(matched[0].decode())

    @app.get("/health")
    async def health() -> JSONResponse:
        """200 while serving; 503 once draining, so a load balancer sends new requests elsewhere."""
        draining = drain.draining
        return JSONResponse({"status": "draining" if draining else "ok"}, status_code=503 if draining else 200)

    @app.get("/metrics", dependencies=[Depends(client_key)])
    async def metrics() -> Response:
        return Response(handler.metrics.exposition(), media_type=handler.metrics.content_type)

    @app.get("/v1/models", dependencies=[Depends(client_key)])
    async def models() -> dict[str, Any]:
        card = {"id": options.name, "object": "model", "created": started, "owned_by": "agentbalance"}
        described = model.describe()
        if handler.governor is not None:
            described["governor"] = handler.governor.state()
        return {"object": "list", "data": [card | {"agentbalance": described}]}

    @app.post(CHAT_PATH)
    async def chat_completions(body: ChatRequest, http: Request, key: str = Depends(client_key)) -> Response:
        http.state.stream = bool(body.stream)  # how a refusal of this request is counted
        asked = read_request(body, options.name, budgeted=model.controller.budget_range is not None)
        budget = asked.budget or options.budget
        request = ServedRequest(asked, model.query(asked), budget, model.serving(budget), body.model, key)
        handler.admit(request)
        if asked.stream:
            return handler.stream(request)
        return await handler.complete(request, http)

    return app


def _error_handlers(app: FastAPI, metrics: ServeMetrics) -> None:
    """Every error as OpenAI's error object: a refused request with its status, a malformed body as 400 (never
    FastAPI's 422), an unknown route as 404, and anything unexpected as a 500 without a traceback. A refused chat
    completion is counted here, by its status (an answered one where it is answered)."""

    def counted(request: Request, response: JSONResponse) -> JSONResponse:
        if request.url.path == CHAT_PATH:
            metrics.status(response.status_code, getattr(request.state, "stream", False))
        return response

    @app.exception_handler(ProtocolError)
    async def refused(request: Request, error: ProtocolError) -> JSONResponse:
        return counted(request, JSONResponse(error.body(), status_code=error.status, headers=error.headers))

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, error: RequestValidationError) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            message = "body: send the request as JSON, with the header Content-Type: application/json"
            return counted(request, JSONResponse(error_body(message, "invalid_request_error", "body"), 400))
        problems = []
        for problem in error.errors()[:5]:
            if problem.get("type") == "json_invalid":
                problems.append(f"body: not valid JSON ({problem.get('ctx', {}).get('error', 'unreadable')})")
                continue
            where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body") or "body"
            problems.append(f"{where}: {problem.get('msg', 'invalid')}")
        first = problems[0].split(":")[0] if problems else None
        message = f"invalid request: {'; '.join(problems)}"
        return counted(request, JSONResponse(error_body(message, "invalid_request_error", first), status_code=400))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        body = error_body(str(error.detail), "invalid_request_error")
        response = JSONResponse(body, status_code=error.status_code, headers=dict(error.headers or {}))
        return counted(request, response)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, type(error).__name__, exc_info=error)
        body = error_body("internal server error; the server's log has the details", "server_error")
        return counted(request, JSONResponse(body, status_code=500))
