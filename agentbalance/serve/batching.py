"""MAS construction for concurrent requests: what arrives while a batch is being built is built together.

One forward pass (`TrainedController.construct_many`, through the served model) per batch and operating point, on
one worker thread, so torch never blocks the event loop and a burst of requests costs one pass instead of one each.
It never executes a MAS.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from agentbalance.mas import MAS
from agentbalance.query import Query

Point = TypeVar("Point", bound=Hashable)


@dataclass
class _Asked(Generic[Point]):
    query: Query
    point: Point
    future: asyncio.Future[MAS] = field(repr=False)


class ConstructionBatcher(Generic[Point]):
    """`await construct(query, point)` from any number of requests; at most `max_batch` queries per pass.

    `build(queries, point)` builds the MAS of queries served at one operating point (a budget, the governor's
    tightening). Batches need no waiting: the first request starts a pass at once, and the ones that arrive
    during it form the next. Queries of one batch at different points are built in one pass per point.
    """

    def __init__(self, build: Callable[[list[Query], Point], list[MAS]], max_batch: int = 64) -> None:
        self.build = build
        self.max_batch = max_batch
        self._pending: list[_Asked[Point]] = []
        self._building: list[_Asked[Point]] = []  # the batch in the worker thread now
        self._executor: ThreadPoolExecutor | None = None
        self._ready: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self.passes = 0  # forward passes so far (the batching's effect: fewer passes than requests)

    async def construct(self, query: Query, point: Point) -> MAS:
        """The MAS of one query (errors of the construction, e.g. a budget out of range, raise here)."""
        loop = asyncio.get_running_loop()
        if self._worker is None or self._ready is None:  # the first request (after `aclose`: again)
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentbalance-construct")
            self._ready = asyncio.Event()
            self._worker = loop.create_task(self._work(self._executor), name="agentbalance-construct")
        asked = _Asked(query, point, loop.create_future())
        self._pending.append(asked)
        self._ready.set()
        return await asked.future

    async def _work(self, executor: ThreadPoolExecutor) -> None:
        assert self._ready is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._pending:
                batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
                self._building = batch
                by_point: dict[Point, list[_Asked[Point]]] = {}
                for asked in batch:
                    if not asked.future.done():  # a request cancelled while waiting needs no MAS
                        by_point.setdefault(asked.point, []).append(asked)
                for point, group in by_point.items():
                    queries = [asked.query for asked in group]
                    try:
                        systems = await loop.run_in_executor(executor, self.build, queries, point)
                    except Exception as error:  # each request of the pass gets its error
                        for asked in group:
                            if not asked.future.done():
                                asked.future.set_exception(error)
                        continue
                    finally:
                        self.passes += 1
                    for asked, mas in zip(group, systems, strict=True):
                        if not asked.future.done():
                            asked.future.set_result(mas)

    async def aclose(self) -> None:
        """Stop the worker; requests still waiting fail with a RuntimeError (the server is shutting down)."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        for asked in [*self._building, *self._pending]:
            if not asked.future.done():
                asked.future.set_exception(RuntimeError("the server is shutting down"))
        self._pending, self._building = [], []
        if self._executor is not None:
            await asyncio.to_thread(self._executor.shutdown, wait=True)
            self._executor = None
