"""MAS construction for concurrent requests: what arrives while a batch is being built is built together.

One forward pass (`TrainedController.construct_many`) per batch, on one worker thread, so torch never blocks the
event loop and a burst of requests costs one pass instead of one each. It never executes a MAS.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from agentbalance.budgets import Budget
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.trained import TrainedController


@dataclass
class _Asked:
    query: Query
    budget: Budget | None
    future: asyncio.Future[MAS] = field(repr=False)


class ConstructionBatcher:
    """`await construct(query, budget)` from any number of requests; at most `max_batch` queries per pass.

    Batches need no waiting: the first request starts a pass at once, and the ones that arrive during it form
    the next. Queries of one batch with different budgets are built in one pass per budget.
    """

    def __init__(self, controller: TrainedController, max_batch: int = 64) -> None:
        self.controller = controller
        self.max_batch = max_batch
        self._pending: list[_Asked] = []
        self._building: list[_Asked] = []  # the batch in the worker thread now
        self._executor: ThreadPoolExecutor | None = None
        self._ready: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self.passes = 0  # forward passes so far (the batching's effect: fewer passes than requests)

    async def construct(self, query: Query, budget: Budget | None = None) -> MAS:
        """The MAS of one query (errors of the construction, e.g. a budget out of range, raise here)."""
        loop = asyncio.get_running_loop()
        if self._worker is None or self._ready is None:  # the first request (after `aclose`: again)
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentbalance-construct")
            self._ready = asyncio.Event()
            self._worker = loop.create_task(self._work(self._executor), name="agentbalance-construct")
        asked = _Asked(query, budget, loop.create_future())
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
                by_budget: dict[Budget | None, list[_Asked]] = {}
                for asked in batch:
                    if not asked.future.done():  # a request cancelled while waiting needs no MAS
                        by_budget.setdefault(asked.budget, []).append(asked)
                for budget, group in by_budget.items():
                    queries = [asked.query for asked in group]
                    try:
                        masses = await loop.run_in_executor(executor, self.controller.construct_many, queries, budget)
                    except Exception as error:  # each request of the pass gets its error
                        for asked in group:
                            if not asked.future.done():
                                asked.future.set_exception(error)
                        continue
                    finally:
                        self.passes += 1
                    for asked, mas in zip(group, masses, strict=True):
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
