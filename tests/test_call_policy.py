"""The live world's call policy alone, with no HTTP: scripted attempts, the waits it picks, the deadline it keeps, the
calls it lets run at once."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.worlds.call_policy import MAX_RETRY_AFTER_S, AttemptFailure, CallPolicy, GaveUp


@dataclass
class Counts:
    """What the policy counts into (a world's statistics in real use)."""

    requests: int = 0
    retries: int = 0


@dataclass
class Script:
    """An attempt that answers from a list, one outcome per attempt, and notes the timeouts it was given."""

    outcomes: Sequence[str | AttemptFailure]
    seconds: float = 0.0  # how long each attempt takes
    timeouts: list[float] = field(default_factory=list)

    async def __call__(self, timeout_s: float) -> str | AttemptFailure:
        self.timeouts.append(timeout_s)
        await asyncio.sleep(self.seconds)
        return self.outcomes[min(len(self.timeouts), len(self.outcomes)) - 1]


def no_wait(**settings: float | int | None) -> CallPolicy:
    """A policy whose backoff waits are 0 (no Retry-After): the retries without the time."""
    return CallPolicy(**{"backoff_base_s": 0.0, **settings})  # type: ignore[arg-type]


def run(policy: CallPolicy, script: Script, counts: Counts | None = None) -> str | GaveUp:
    return asyncio.run(policy.run("tiny", script, counts or Counts()))


RETRY = AttemptFailure("retry", "HTTP 503")


# ----------------------------------------------------------------------------- the waits


def test_retry_after_header_sets_the_wait_plus_a_little_jitter() -> None:
    policy = CallPolicy(backoff_base_s=0.5)
    waits = [policy.backoff_s(0, 0.3) for _ in range(200)]
    assert min(waits) >= 0.3 and max(waits) <= 0.3 + 0.5 and statistics.pstdev(waits) > 0


def test_a_retry_after_longer_than_the_cap_is_waited_only_the_cap() -> None:
    policy = CallPolicy(backoff_base_s=0.5)
    waits = [policy.backoff_s(0, 3600.0) for _ in range(50)]
    assert min(waits) >= MAX_RETRY_AFTER_S and max(waits) <= MAX_RETRY_AFTER_S + 0.5


def test_backoff_without_retry_after_is_full_jitter_under_an_exponential_cap() -> None:
    policy = CallPolicy(backoff_base_s=0.5, seed=3)
    for retry in range(8):
        cap = min(policy.backoff_max_s, policy.backoff_base_s * 2**retry)
        waits = [policy.backoff_s(retry, None) for _ in range(400)]
        assert min(waits) >= 0 and max(waits) <= cap
        assert min(waits) < 0.1 * cap and max(waits) > 0.9 * cap  # spread over the whole range: full jitter
        assert statistics.mean(waits) == pytest.approx(cap / 2, rel=0.15)


def test_the_same_seed_gives_the_same_waits_and_another_seed_others() -> None:
    first, again, other = CallPolicy(seed=3), CallPolicy(seed=3), CallPolicy(seed=4)
    waits = [first.backoff_s(2, None) for _ in range(5)]
    assert waits == [again.backoff_s(2, None) for _ in range(5)]
    assert waits != [other.backoff_s(2, None) for _ in range(5)]


def test_the_default_deadline_leaves_room_for_every_attempt_and_every_longest_backoff() -> None:
    policy = CallPolicy(timeout_s=10.0, max_retries=3, backoff_max_s=5.0)
    assert policy.deadline_s == 10.0 * 4 + 5.0 * 3


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
        ({"concurrency_per_backbone": 0}, "concurrency_per_backbone must be at least 1, got 0"),
        ({"timeout_s": float("nan")}, "timeout_s must be positive, got nan"),
        ({"max_retries": -1}, "max_retries must be 0 or more, got -1"),
        ({"backoff_base_s": -0.1}, "backoff_base_s must be a finite number >= 0, got -0.1"),
        ({"backoff_max_s": float("inf")}, "backoff_max_s must be a finite number >= 0, got inf"),
        ({"deadline_s": 0.0}, "deadline_s must be a positive number, got 0.0"),
    ],
)
def test_a_setting_out_of_range_is_refused_when_the_policy_is_built(settings: dict[str, float], message: str) -> None:
    with pytest.raises(AgentBalanceError, match=f"^live world: {message}$"):
        CallPolicy(**settings)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- retries


def test_a_retryable_failure_is_tried_again_until_an_answer_arrives() -> None:
    counts = Counts()
    outcome = run(no_wait(max_retries=3), Script([RETRY, RETRY, "answer"]), counts)
    assert outcome == "answer"
    assert counts == Counts(requests=3, retries=2)


def test_when_the_retries_run_out_the_policy_gives_up_with_the_last_failure() -> None:
    counts = Counts()
    outcome = run(no_wait(max_retries=2), Script([RETRY, RETRY, AttemptFailure("retry", "timed out")]), counts)
    assert isinstance(outcome, GaveUp)
    assert outcome.failure.reason == "timed out" and outcome.attempts == 3
    assert counts == Counts(requests=3, retries=2)


def test_a_failure_that_is_not_retryable_ends_the_call_at_once() -> None:
    counts = Counts()
    outcome = run(no_wait(max_retries=3), Script([AttemptFailure("fail", "malformed JSON"), "answer"]), counts)
    assert isinstance(outcome, GaveUp) and outcome.attempts == 1 and outcome.failure.reason == "malformed JSON"
    assert counts == Counts(requests=1, retries=0)


def test_a_user_failure_stops_the_run_with_its_reason() -> None:
    script = Script([AttemptFailure("user", "live world: the key was rejected"), "answer"])
    with pytest.raises(AgentBalanceError, match=r"^live world: the key was rejected$"):
        run(no_wait(max_retries=3), script)
    assert len(script.timeouts) == 1


def test_a_call_that_never_connected_is_told_apart_from_one_that_lost_its_connection() -> None:
    refused = AttemptFailure("retry", "connection refused", unreachable=True)
    never = run(no_wait(max_retries=2), Script([refused]))
    once_lost = run(no_wait(max_retries=2), Script([refused, AttemptFailure("retry", "connection lost"), refused]))
    assert isinstance(never, GaveUp) and never.never_connected and never.refused == 3
    assert isinstance(once_lost, GaveUp) and not once_lost.never_connected and once_lost.refused == 2


# ----------------------------------------------------------------------------- the deadline


def test_a_wait_that_would_pass_the_deadline_is_not_waited() -> None:
    policy = CallPolicy(max_retries=3, deadline_s=1.0)
    started = time.perf_counter()
    outcome = run(policy, Script([AttemptFailure("retry", "HTTP 429", retry_after_s=30.0)]))
    assert time.perf_counter() - started < 1.0
    assert isinstance(outcome, GaveUp) and outcome.attempts == 1
    assert "a retry in" in outcome.failure.reason and "would pass the call's 1 s deadline" in outcome.failure.reason


def test_each_attempts_timeout_is_cut_to_what_is_left_of_the_deadline() -> None:
    script = Script([RETRY, RETRY, "answer"], seconds=0.2)
    outcome = run(no_wait(timeout_s=10.0, max_retries=5, deadline_s=1.0), script)
    assert outcome == "answer"
    first, second, third = script.timeouts
    assert first == pytest.approx(1.0, abs=0.01)
    assert second <= 0.8 + 0.01 and third <= 0.6 + 0.01 and third < second < first


def test_the_deadline_starts_with_the_first_request_not_with_the_queue_behind_our_own_limit() -> None:
    policy = no_wait(concurrency=1, timeout_s=10.0, deadline_s=0.5)
    ahead, behind = Script(["first"], seconds=0.6), Script(["second"])

    async def both() -> list[str | GaveUp]:
        return await asyncio.gather(policy.run("tiny", ahead, Counts()), policy.run("tiny", behind, Counts()))

    assert asyncio.run(both()) == ["first", "second"]
    assert behind.timeouts[0] == pytest.approx(0.5, abs=0.01)  # it queued 0.6 s, more than its deadline


def test_an_attempt_whose_turn_comes_after_the_deadline_is_never_sent() -> None:
    policy = no_wait(concurrency=1, timeout_s=10.0, max_retries=3, deadline_s=0.3)
    late, hog = Script([RETRY, "never"]), Script(["hog"], seconds=0.6)
    late_counts = Counts()

    async def both() -> list[str | GaveUp]:
        return await asyncio.gather(policy.run("tiny", late, late_counts), policy.run("tiny", hog, Counts()))

    outcome, _ = asyncio.run(both())
    assert isinstance(outcome, GaveUp) and outcome.failure.reason == "the call's 0.3 s deadline passed"
    assert len(late.timeouts) == 1 and late_counts == Counts(requests=1, retries=1)
    assert outcome.elapsed_s >= 0.3


# ----------------------------------------------------------------------------- concurrency


@dataclass
class InFlight:
    """Attempts that count how many of them run at once, in all and per backbone."""

    now: dict[str, int] = field(default_factory=dict)
    most: dict[str, int] = field(default_factory=dict)
    most_in_all: int = 0

    def attempt(self, backbone: str) -> Callable[[float], Awaitable[str]]:
        async def one(timeout_s: float) -> str:
            self.now[backbone] = self.now.get(backbone, 0) + 1
            self.most[backbone] = max(self.most.get(backbone, 0), self.now[backbone])
            self.most_in_all = max(self.most_in_all, sum(self.now.values()))
            await asyncio.sleep(0.05)
            self.now[backbone] -= 1
            return backbone

        return one


def run_many(policy: CallPolicy, backbones: Sequence[str]) -> InFlight:
    seen = InFlight()

    async def all_of_them() -> None:
        await asyncio.gather(*(policy.run(name, seen.attempt(name), Counts()) for name in backbones))

    asyncio.run(all_of_them())
    return seen


def test_the_world_limit_bounds_the_calls_in_flight() -> None:
    seen = run_many(CallPolicy(concurrency=2), ["a"] * 6)
    assert seen.most_in_all == 2


def test_the_per_backbone_limit_bounds_each_backbone_apart() -> None:
    seen = run_many(CallPolicy(concurrency=10, concurrency_per_backbone=1), ["a", "b"] * 3)
    assert seen.most == {"a": 1, "b": 1} and seen.most_in_all == 2


def test_without_a_per_backbone_limit_one_backbone_may_take_every_slot() -> None:
    seen = run_many(CallPolicy(concurrency=3), ["a"] * 6)
    assert seen.most == {"a": 3}


def test_the_limits_hold_in_each_event_loop_apart() -> None:
    policy = CallPolicy(concurrency=2)
    first, second = run_many(policy, ["a"] * 4), run_many(policy, ["a"] * 4)  # a new loop each: new semaphores
    assert first.most_in_all == second.most_in_all == 2
