"""The call policy of a live world: how many attempts a call gets, how long it waits between them, when it must end,
and how many calls are in flight at once (in all, and per backbone); its rules are listed in `worlds.live`'s docstring.

It must never send a request or read a response (the attempt it is given does that), nor wait past a call's deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import random
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from agentbalance.errors import AgentBalanceError

MAX_RETRY_AFTER_S = 120.0  # a longer Retry-After is waited this long, then the call is tried again

Answer = TypeVar("Answer")


@dataclass(frozen=True)
class AttemptFailure:
    """One failed attempt, described in our own words (never the SDK's, which may quote a key).

    `kind` is what the policy does next: `retry` (try again if the retries and the deadline allow), `fail` (the
    call fails now) or `user` (a user error: the run stops).
    """

    kind: Literal["retry", "fail", "user"]
    reason: str
    retry_after_s: float | None = None
    unreachable: bool = False  # nothing listens there (connection refused), as opposed to a dropped link
    prompt_tokens: int = 0  # what the failed attempt was billed, when the endpoint said
    completion_tokens: int = 0


@dataclass(frozen=True)
class GaveUp:
    """A call whose retries or deadline ran out: its last failure, how many attempts it made and how long it took."""

    failure: AttemptFailure
    attempts: int
    refused: int  # attempts that found nothing listening
    elapsed_s: float  # from the call's start to giving up, waits and queueing included

    @property
    def never_connected(self) -> bool:
        """Whether every attempt found nothing listening (a wrong URL, a server not started)."""
        return self.refused == self.attempts


class AttemptCounts(Protocol):
    """Where the policy counts what it did (a world's statistics): requests sent and retries made."""

    requests: int
    retries: int


Attempt = Callable[[float], Awaitable[Answer | AttemptFailure]]
"""One attempt of a call, given its timeout in seconds: the answer, or a failure (it never raises for a failure)."""


@dataclass
class _Deadline:
    """One call's deadline: it starts with the first request and covers every attempt and wait after it."""

    seconds: float
    started: float | None = None

    def start(self) -> None:
        if self.started is None:
            self.started = time.perf_counter()

    def remaining_s(self) -> float:
        if self.started is None:
            return self.seconds
        return self.seconds - (time.perf_counter() - self.started)


@dataclass
class _Limits:
    """The concurrency limits of one event loop (a semaphore is bound to the loop that first used it)."""

    calls: asyncio.Semaphore
    per_backbone: dict[str, asyncio.Semaphore] = field(default_factory=dict)


class CallPolicy:
    """Retries, backoff, the deadline and the concurrency limits of a live world's calls, with no HTTP in it."""

    def __init__(
        self,
        concurrency: int = 16,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        deadline_s: float | None = None,
        concurrency_per_backbone: int | None = None,
        seed: int = 0,
    ) -> None:
        if concurrency < 1:
            raise AgentBalanceError(f"live world: concurrency must be at least 1, got {concurrency}")
        if concurrency_per_backbone is not None and concurrency_per_backbone < 1:
            raise AgentBalanceError(
                f"live world: concurrency_per_backbone must be at least 1, got {concurrency_per_backbone}"
            )
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise AgentBalanceError(f"live world: timeout_s must be positive, got {timeout_s}")
        if max_retries < 0:
            raise AgentBalanceError(f"live world: max_retries must be 0 or more, got {max_retries}")
        for name, value in (("backoff_base_s", backoff_base_s), ("backoff_max_s", backoff_max_s)):
            if not (math.isfinite(value) and value >= 0):
                raise AgentBalanceError(f"live world: {name} must be a finite number >= 0, got {value}")
        if deadline_s is None:  # room for every attempt to time out and every backoff to be its longest
            deadline_s = timeout_s * (max_retries + 1) + backoff_max_s * max_retries
        if not (math.isfinite(deadline_s) and deadline_s > 0):
            raise AgentBalanceError(f"live world: deadline_s must be a positive number, got {deadline_s}")
        self.concurrency = concurrency
        self.concurrency_per_backbone = concurrency_per_backbone
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.deadline_s = float(deadline_s)
        self._rng = random.Random(seed)  # backoff jitter only; answers never depend on it
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Limits] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return (
            f"CallPolicy(concurrency={self.concurrency}, timeout_s={self.timeout_s:g}, "
            f"max_retries={self.max_retries}, deadline_s={self.deadline_s:g})"
        )

    def backoff_s(self, retry: int, retry_after_s: float | None) -> float:
        """Seconds before retry number `retry` (0-based): the server's Retry-After, else full jitter."""
        if retry_after_s is not None:
            return min(retry_after_s, MAX_RETRY_AFTER_S) + self._rng.uniform(0, self.backoff_base_s)
        return self._rng.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2**retry))

    async def run(self, backbone: str, attempt: Attempt[Answer], counts: AttemptCounts) -> Answer | GaveUp:
        """Attempts with backoff until one answers, a user error stops the run (AgentBalanceError), or the retries or
        the deadline run out (GaveUp: the caller decides what that failure means)."""
        started = time.perf_counter()
        clock = _Deadline(self.deadline_s)
        attempts = 0
        refused = 0
        while True:
            attempts += 1
            outcome = await self._attempt(backbone, attempt, clock, counts)
            if not isinstance(outcome, AttemptFailure):
                return outcome
            if outcome.kind == "user":
                raise AgentBalanceError(outcome.reason)
            refused += outcome.unreachable
            if outcome.kind == "retry" and attempts <= self.max_retries:
                wait_s = self.backoff_s(attempts - 1, outcome.retry_after_s)
                if clock.remaining_s() <= wait_s:
                    outcome = dataclasses.replace(
                        outcome,
                        reason=f"{outcome.reason}; a retry in {wait_s:.3g} s would pass the call's "
                        f"{self.deadline_s:g} s deadline",
                    )
                    break
                counts.retries += 1
                await asyncio.sleep(wait_s)
                continue
            break
        return GaveUp(outcome, attempts, refused, time.perf_counter() - started)

    async def _attempt(
        self, backbone: str, attempt: Attempt[Answer], clock: _Deadline, counts: AttemptCounts
    ) -> Answer | AttemptFailure:
        """One attempt under the concurrency limits (the backbone's, then the world's), its timeout cut to the
        call's deadline."""
        limits = self._limits()
        async with self._backbone_limit(limits, backbone), limits.calls:
            clock.start()  # the deadline runs from the first request, not from queueing behind our own limit
            timeout_s = min(self.timeout_s, clock.remaining_s())
            if timeout_s <= 0:
                return AttemptFailure("fail", f"the call's {self.deadline_s:g} s deadline passed")
            counts.requests += 1
            return await attempt(timeout_s)

    def _limits(self) -> _Limits:
        loop = asyncio.get_running_loop()
        limits = self._loops.get(loop)
        if limits is None:
            limits = self._loops[loop] = _Limits(asyncio.Semaphore(self.concurrency))
        return limits

    def _backbone_limit(self, limits: _Limits, backbone: str) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """The semaphore bounding this backbone's calls in flight, when the policy has a per-backbone limit."""
        if self.concurrency_per_backbone is None:
            return contextlib.nullcontext()
        limit = limits.per_backbone.get(backbone)
        if limit is None:
            limit = limits.per_backbone[backbone] = asyncio.Semaphore(self.concurrency_per_backbone)
        return limit
