"""What bounds a request's life in the server: admission (running and waiting slots), the drain at shutdown, the
body limit, and cancellation when the client leaves.

It never runs a MAS itself: it starts, bounds and cancels the work it is given, so that every request ends with an
answer or an error and nothing runs (or is paid for) after its client has gone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentbalance.serve.protocol import ProtocolError, error_body

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before its answer was ready; its work was cancelled."""


class Admission:
    """At most `running` requests hold a slot at once and `waiting` more wait for one; beyond that, a 503."""

    def __init__(self, running: int, waiting: int) -> None:
        self.running = running
        self.waiting = waiting
        self.admitted = 0  # holding or waiting for a slot
        self._slots = asyncio.Semaphore(running)

    def check(self) -> None:
        """A 503 now when every slot is taken (a stream checks before it starts, so the client gets a status)."""
        if self.admitted >= self.running + self.waiting:
            raise ProtocolError(
                503,
                f"the server is busy ({self.running} requests running, {self.waiting} waiting); retry later",
                kind="server_busy",
                headers={"Retry-After": "1"},
            )

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.check()
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

    def check(self) -> None:
        """A 503 now when the server is shutting down."""
        if self.draining:
            raise ProtocolError(
                503, "the server is shutting down; send the request elsewhere or later", kind="server_shutting_down"
            )

    async def run(self, work: Awaitable[T]) -> T:
        """`work`, unless the grace period after `begin` ends first (then a 503)."""
        if self._begun is None:  # an app run without its lifespan: nothing to drain
            return await work
        self.check()
        finished, result = await unless(work, self._expired())
        if finished:
            return result  # type: ignore[return-value]
        raise ProtocolError(
            503,
            f"the server is shutting down: this request did not finish within the {self.grace_s:g} s grace period "
            "and was cancelled (no further calls are made for it); retry it elsewhere or later",
            kind="server_shutting_down",
        )


class BodyLimit:
    """Refuses a body over `limit` bytes with a 413: at once when its Content-Length says so, else (a chunked body,
    which declares no length) as soon as the bytes read pass the limit, so no body is ever held beyond it.

    The body is read here, then handed to the app in one message; later `receive` calls go to the server, so the
    app still hears the client's disconnect.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(f"{int(declared)} bytes", scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left while sending
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                unsized = f"more than {self.limit} bytes (sent without a Content-Length)"
                await self._refuse(unsized, scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, size: str, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"body: {size} is more than this server reads ({self.limit} bytes)"
        await JSONResponse(error_body(message, "invalid_request_error", "body"), 413)(scope, receive, send)


async def until_disconnected(request: Request, work: Awaitable[T]) -> T:
    """`work`, unless the client disconnects first: then `work` is cancelled (its calls in flight with it, and no
    other starts) and ClientGone is raised. The request's body must have been read already (FastAPI has)."""
    finished, result = await unless(work, _disconnect(request))
    if finished:
        return result  # type: ignore[return-value]
    raise ClientGone


async def unless(work: Awaitable[T], event: Awaitable[None]) -> tuple[bool, T | None]:
    """(True, `work`'s result), unless `event` happens first: then `work` is cancelled, and awaited until it has
    stopped, and (False, None) is returned. Cancelling this cancels both."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(event)
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the request itself was cancelled: so is its work
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task.done():
        return True, task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False, None


async def _disconnect(request: Request) -> None:
    """Returns when the client has disconnected (the server's `http.disconnect` message)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
