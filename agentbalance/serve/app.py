"""The ASGI app of `agentbalance serve`: a trained controller's MAS as one OpenAI-compatible model.

POST /v1/chat/completions, GET /v1/models, GET /health. It never trains, never reads a run folder itself (the
ServedModel goes through TrainedController), and never puts a key or a traceback in a response or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbalance.budgets import Budget
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query, as_query
from agentbalance.roles import RoleSet
from agentbalance.runtime.execution import Caps
from agentbalance.runtime.runner import Runner
from agentbalance.runtime.trace import Trace
from agentbalance.serve.batching import ConstructionBatcher
from agentbalance.serve.protocol import (
    SERVED_MODEL,
    Asked,
    ChatRequest,
    ProtocolError,
    completion_body,
    error_body,
    read_request,
    unanswered,
)
from agentbalance.trained import TrainedController
from agentbalance.worlds.base import AgentCall, AgentCallFailed, RecordedWorld, World
from agentbalance.worlds.live import LiveWorld

log = logging.getLogger("agentbalance.serve")
T = TypeVar("T")
MAX_BODY_BYTES = 1 << 20  # 1 MiB: a question, not a corpus
ENCODER_MEMORY = 20_000  # query embeddings kept in memory (about 30 MB)
# texts per encoder batch: a batch pads to its longest text, and on the CPU a batch of 64 of the simulator's
# questions cost 2.4x the time per text of batches of 1-8 (measured: 120 vs 46-51 ms of CPU per text, one
# thread); the embeddings do not depend on it (float64), and the controller's own pass still takes the lot
ENCODER_BATCH = 8


@dataclass(frozen=True)
class ServeOptions:
    """How the server admits, runs and answers requests.

    `max_requests` run at once (constructing and executing their MAS) and up to `max_waiting` more wait for a
    slot; a request beyond both is answered 503 at once. `concurrency` bounds the LLM calls in flight across
    all requests. `budget` is served to requests that name none (None: the model's own). `api_key`: the bearer
    token clients must send (None: no auth). After SIGTERM, in-flight requests get `grace_s` seconds to finish,
    then fail with a 503 that says so.
    """

    name: str = SERVED_MODEL
    max_requests: int = 64
    max_waiting: int = 256
    concurrency: int = 32
    caps: Caps = field(default_factory=Caps)
    budget: Budget | None = None
    api_key: str | None = field(default=None, repr=False)
    grace_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_requests < 1 or self.max_waiting < 0:
            raise AgentBalanceError(
                f"serve: --max-requests must be at least 1 and --max-waiting at least 0, got "
                f"{self.max_requests} and {self.max_waiting}"
            )
        if not self.grace_s >= 0:
            raise AgentBalanceError(f"serve: --grace must be 0 or more seconds, got {self.grace_s}")
        if self.api_key is not None and not self.api_key.strip():
            raise AgentBalanceError("serve: the server's API key is empty")


class ServedModel:
    """A trained controller over a world, as the server uses it: the budget and query of a request, the runner
    that executes its MAS. One model may back several apps (each builds MAS with its own batcher)."""

    def __init__(self, controller: TrainedController, world: World) -> None:
        self.controller = controller.over(world)
        self.world = world

    @classmethod
    def load(cls, run_dir: str | Path, world: World, roles: RoleSet | None = None) -> ServedModel:
        """The run folder's controller over `world`. Its encoder keeps no disk cache (users' questions are not
        written to disk by it) and a bounded memory cache, so a long-running server does not grow."""
        encoder = TextEncoder(use_disk_cache=False, batch_size=ENCODER_BATCH, memory_limit=ENCODER_MEMORY)
        return cls(TrainedController.load(run_dir, world=world, roles=roles, encoder=encoder), world)

    def serving(self, budget: Budget | None) -> Budget:
        """The budget a request is served with, or a 400 naming the budgets this model serves."""
        try:
            served, _ = self.controller.serving(budget)
        except AgentBalanceError as error:
            known = self.controller.budget_range
            also = f" (this model serves {known.describe()}; a looser budget is served as the loosest)" if known else ""
            raise ProtocolError(400, f"budget: {error}{also}", param="budget") from None
        return served

    def query(self, asked: Asked) -> Query:
        """The query of a request: its text (same text, same id: the simulator answers it the same way), or in a
        replay world the recorded question `query_id` names."""
        if isinstance(self.world, RecordedWorld):
            if asked.query_id is None:
                raise ProtocolError(
                    400,
                    f"query_id: the {self.world.name!r} world replays recorded answers, so it answers only its "
                    'recorded questions: name one with the body field "query_id"',
                    param="query_id",
                )
            try:
                return self.world.resolve_query(Query(id=asked.query_id, question=asked.question))
            except (AgentBalanceError, KeyError, IndexError):
                raise ProtocolError(
                    400,
                    f"query_id: {asked.query_id!r} is not a recorded question of {self.world.name!r}",
                    param="query_id",
                ) from None
        if asked.query_id is not None:
            raise ProtocolError(400, "query_id: only a replay world looks questions up by id", param="query_id")
        return as_query(asked.question)

    def check_fits(self, mas: MAS, query: Query) -> None:
        """A 400 when the question alone cannot fit the context window of one of the MAS's backbones (with its
        role prompt and completion limit): the client must shorten it; no call is sent or paid for."""
        if not isinstance(self.world, LiveWorld):  # only a live world fits prompts to context windows
            return
        roles, catalog = self.controller.roles, self.world.catalog
        for agent in mas.agents:
            try:
                self.world.fitted_prompt(AgentCall(agent, roles[agent.role], catalog[agent.backbone], query))
            except AgentCallFailed as error:
                too_long = f"messages: the question is too long for backbone {agent.backbone!r}: {error}"
                raise ProtocolError(400, too_long, param="messages") from None

    def runner(self, caps: Caps, concurrency: int) -> Runner:
        return self.controller.runner(self.world, caps=caps, concurrency=concurrency)

    def describe(self) -> dict[str, Any]:
        """What /v1/models says about the model beyond its name."""
        controller = self.controller
        budget_range = controller.budget_range
        return {
            "run": controller.run_dir.name,
            "world": self.world.name,
            "simulated": self.world.simulated,
            "budget": dataclasses.asdict(controller.budget),
            "budget_range": budget_range.describe() if budget_range is not None else None,
            "backbones": list(controller.backbones),
        }


class Admission:
    """At most `running` requests hold a slot at once and `waiting` more wait for one; beyond that, a 503."""

    def __init__(self, running: int, waiting: int) -> None:
        self.running = running
        self.waiting = waiting
        self.admitted = 0  # holding or waiting for a slot
        self._slots = asyncio.Semaphore(running)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self.admitted >= self.running + self.waiting:
            raise ProtocolError(
                503,
                f"the server is busy ({self.running} requests running, {self.waiting} waiting); retry later",
                kind="server_busy",
                headers={"Retry-After": "1"},
            )
        self.admitted += 1
        try:
            async with self._slots:
                yield
        finally:
            self.admitted -= 1


class Drain:
    """The shutdown of requests: once `begin` is called (SIGTERM), new requests get a 503, and each in-flight one
    either finishes within `grace_s` seconds or is cancelled and answered with a 503 that says so."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._begun: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop the requests run in (the app's startup)."""
        self._loop, self._begun = loop, asyncio.Event()

    def begin(self) -> None:
        """Start draining; safe from a signal handler or another thread."""
        if self._loop is not None and self._begun is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._begun.set)

    @property
    def draining(self) -> bool:
        return self._begun is not None and self._begun.is_set()

    async def _expired(self) -> None:
        assert self._begun is not None
        await self._begun.wait()
        await asyncio.sleep(self.grace_s)

    async def run(self, work: Awaitable[T]) -> T:
        """`work`, unless the grace period after `begin` ends first (then a 503)."""
        if self._begun is None:  # an app run without its lifespan: nothing to drain
            return await work
        if self.draining:
            raise ProtocolError(
                503, "the server is shutting down; send the request elsewhere or later", kind="server_shutting_down"
            )
        task = asyncio.ensure_future(work)
        deadline = asyncio.ensure_future(self._expired())
        try:
            await asyncio.wait({task, deadline}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the request itself was cancelled: so is its work
            task.cancel()
            raise
        finally:
            deadline.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise ProtocolError(
            503,
            f"the server is shutting down: this request did not finish within the {self.grace_s:g} s grace period "
            "and was cancelled (no further calls are made for it); retry it elsewhere or later",
            kind="server_shutting_down",
        )


class BodyLimit:
    """Refuses a body whose Content-Length is over `limit` bytes with a 413, before it is read."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = dict(scope.get("headers", ())).get(b"content-length", b"")
            if declared.isdigit() and int(declared) > self.limit:
                message = f"body: {int(declared)} bytes is more than this server reads ({self.limit} bytes)"
                await JSONResponse(error_body(message, "invalid_request_error", "body"), 413)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(model: ServedModel, options: ServeOptions | None = None) -> FastAPI:
    """The app serving `model`. Its lifespan binds the drain to the event loop and, at shutdown, stops its
    construction worker and closes the world's HTTP clients of that loop."""
    options = options or ServeOptions()
    admission = Admission(options.max_requests, options.max_waiting)
    drain = Drain(options.grace_s)
    runner = model.runner(options.caps, options.concurrency)
    batcher = ConstructionBatcher(model.controller)
    calls = asyncio.Semaphore(options.concurrency)  # LLM calls in flight, across requests
    started = int(time.time())

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        drain.bind(asyncio.get_running_loop())
        try:
            yield
        finally:
            await batcher.aclose()
            close = getattr(model.world, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # closing must never hide the shutdown's own outcome
                    await close()

    app = FastAPI(title="agentbalance", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.state.drain = drain
    app.state.admission = admission
    app.state.batcher = batcher
    _error_handlers(app)

    def authorised(request: Request) -> None:
        if options.api_key is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), options.api_key.encode()):
            raise ProtocolError(
                401,
                "missing or wrong API key: send the key of the server's --api-key-file as 'Authorization: Bearer KEY'",
                code="invalid_api_key",
                headers={"WWW-Authenticate": "Bearer"},
            )

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "draining" if drain.draining else "ok"}

    @app.get("/v1/models", dependencies=[Depends(authorised)])
    async def models() -> dict[str, Any]:
        card = {"id": options.name, "object": "model", "created": started, "owned_by": "agentbalance"}
        return {"object": "list", "data": [card | {"agentbalance": model.describe()}]}

    @app.post("/v1/chat/completions", dependencies=[Depends(authorised)])
    async def chat_completions(body: ChatRequest) -> JSONResponse:
        asked = read_request(body, options.name, budgeted=model.controller.budget_range is not None)
        budget = asked.budget or options.budget
        served = model.serving(budget)
        query = model.query(asked)
        trace_id = uuid.uuid4().hex

        async def answer() -> tuple[MAS, Trace]:
            async with admission.slot():
                try:
                    mas = await batcher.construct(query, budget)
                except AgentBalanceError as error:
                    raise ProtocolError(400, str(error)) from None
                model.check_fits(mas, query)
                try:
                    return mas, await runner.run(mas, query, calls)
                except AgentBalanceError as error:  # the world refused: key, model, endpoint (never a key in it)
                    raise ProtocolError(502, f"upstream: {error}", kind="upstream_error") from None

        mas, trace = await drain.run(answer())
        failed = unanswered(trace)
        if failed is not None:
            log.warning("trace %s: 502, %s", trace_id, failed)
            raise ProtocolError(502, failed, kind="upstream_error")
        log.info(
            "trace %s: %d agents (%d skipped, %d failed), $%.6f, modelled %.2f s, wall %.3f s",
            trace_id,
            len(trace.agents),
            sum(a.skipped is not None for a in trace.agents),
            trace.failures,
            trace.cost_usd,
            trace.latency_s,
            trace.wall_s,
        )
        return JSONResponse(completion_body(trace, mas, served, body.model, trace_id, int(time.time())))

    return app


def _error_handlers(app: FastAPI) -> None:
    """Every error as OpenAI's error object: a refused request with its status, a malformed body as 400 (never
    FastAPI's 422), an unknown route as 404, and anything unexpected as a 500 without a traceback."""

    @app.exception_handler(ProtocolError)
    async def refused(_: Request, error: ProtocolError) -> JSONResponse:
        return JSONResponse(error.body(), status_code=error.status, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, error: RequestValidationError) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            message = "body: send the request as JSON, with the header Content-Type: application/json"
            return JSONResponse(error_body(message, "invalid_request_error", "body"), status_code=400)
        problems = []
        for problem in error.errors()[:5]:
            if problem.get("type") == "json_invalid":
                problems.append(f"body: not valid JSON ({problem.get('ctx', {}).get('error', 'unreadable')})")
                continue
            where = ".".join(str(part) for part in problem.get("loc", ()) if part != "body") or "body"
            problems.append(f"{where}: {problem.get('msg', 'invalid')}")
        first = problems[0].split(":")[0] if problems else None
        message = f"invalid request: {'; '.join(problems)}"
        return JSONResponse(error_body(message, "invalid_request_error", first), status_code=400)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> JSONResponse:
        body = error_body(str(error.detail), "invalid_request_error")
        return JSONResponse(body, status_code=error.status_code, headers=dict(error.headers or {}))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, type(error).__name__, exc_info=error)
        body = error_body("internal server error; the server's log has the details", "server_error")
        return JSONResponse(body, status_code=500)
