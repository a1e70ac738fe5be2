"""Where the independent units of a sweep run: one after another in this process (`local`), or as Ray tasks
on this machine's cores or on an existing Ray cluster (`ray`). Ray schedules; nothing here is a scheduler.

A unit is a module-level function applied to one picklable argument, returning a picklable result. Both
executors yield `(index, result)` as units finish (local: in order; Ray: in the order they finish), so the
caller records each result as it arrives and a killed sweep keeps every finished unit. What a unit is
(a method on one seed, a training restart) is the caller's business; a unit must depend on its argument
only, never on what ran before it in the same process, so that both executors give the same numbers.
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

from agentbalance.errors import AgentBalanceError

EXECUTORS = ("local", "ray")
EXECUTOR_HELP = "Where independent units run: local (one after another here) or ray (Ray tasks; see docs/cluster.md)."
ADDRESS_HELP = "--executor ray: an existing Ray cluster (HOST:PORT of `ray start --head`); default: a local Ray."
# environment a worker needs to find the same caches and models as the driver (forwarded to Ray workers)
FORWARDED_ENVIRONMENT = (
    "AGENTBALANCE_CACHE_DIR",
    "AGENTBALANCE_EMBEDDING_CACHE_DIR",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class ExecutorSpec:
    """What the user chose: `--executor` and `--address`."""

    kind: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise AgentBalanceError(f"--executor must be one of {', '.join(EXECUTORS)}, got {self.kind!r}")
        if self.address is not None and self.kind != "ray":
            raise AgentBalanceError("--address names a Ray cluster: use it with --executor ray")
        if self.address is not None and not self.address.strip():
            raise AgentBalanceError("--address is empty: give HOST:PORT of a Ray head, or leave it out")

    @property
    def in_process(self) -> bool:
        """Units run in this process, so they may report progress through callbacks as they go."""
        return self.kind == "local"

    def open(self) -> Executor:
        return LocalExecutor() if self.kind == "local" else RayExecutor(self.address)


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """`--executor` and `--address` for a script that sweeps seeds or worlds (the benchmarks)."""
    parser.add_argument("--executor", default="local", choices=EXECUTORS, help=EXECUTOR_HELP)
    parser.add_argument("--address", default=None, help=ADDRESS_HELP)


def map_in_order(spec: ExecutorSpec, function: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
    """Every item's result, in the items' order, for a script that needs them all before it writes anything."""
    with spec.open() as running:
        results = dict(running.map(function, items))
    return [results[index] for index in range(len(items))]


class Executor(Protocol):
    def __enter__(self) -> Executor: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> Iterator[tuple[int, Result]]: ...

    def description(self) -> str: ...


class LocalExecutor:
    """Every unit in this process, in order: the behaviour of a sweep without Ray."""

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        return None

    def map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> Iterator[tuple[int, Result]]:
        for index, item in enumerate(items):
            yield index, function(item)

    def description(self) -> str:
        return "in this process"


class RayExecutor:
    """Every unit a Ray task of one CPU. Without an address a local Ray starts with this machine's cores and
    stops at the end; with one, the sweep joins that cluster (and leaves it running)."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self._ray: Any = None

    def __enter__(self) -> RayExecutor:
        try:
            import ray
        except ImportError:
            raise AgentBalanceError(
                "--executor ray needs Ray, which is not installed: pip install 'agentbalance[ray]'"
            ) from None
        env_vars = {name: os.environ[name] for name in FORWARDED_ENVIRONMENT if name in os.environ}
        options: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": "WARNING",
            "log_to_driver": False,  # a unit's failure comes back as its exception; workers print nothing else
            "runtime_env": {"env_vars": env_vars} if env_vars else None,
        }
        if self.address is not None:
            _check_reachable(self.address)
        try:
            if self.address is None:
                ray.init(address="local", num_cpus=os.cpu_count() or 1, **options)  # never a `ray start` one
            else:
                ray.init(address=self.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
            raise AgentBalanceError(f"cannot start or join {where}: {error}{_auth_hint(error)}") from None
        self._ray = ray
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._ray is not None:
            self._ray.shutdown()  # a local Ray stops; a cluster is only left
            self._ray = None

    def map(self, function: Callable[[Item], Result], items: Sequence[Item]) -> Iterator[tuple[int, Result]]:
        ray = self._ray
        if ray is None:
            raise RuntimeError("RayExecutor.map outside its `with` block")
        remote = ray.remote(num_cpus=1, max_retries=0)(_apply)
        shared = ray.put(function)  # pickled once, not once per unit
        pending = {remote.remote(shared, item): index for index, item in enumerate(items)}
        try:
            while pending:
                (finished,), _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(finished)
                yield index, _result(ray, finished)
        finally:
            for reference in pending:  # an error or an interrupted sweep: no unit runs on unattended
                ray.cancel(reference, force=True)

    def description(self) -> str:
        cpus = int(self._ray.cluster_resources().get("CPU", 0)) if self._ray is not None else 0
        where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
        return f"on {where} ({cpus} CPUs)"


def _check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """Fail at once when nothing listens at a HOST:PORT address (Ray itself retries for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        if address == "auto":
            return
        raise AgentBalanceError(f"--address {address!r}: expected HOST:PORT of a Ray head (e.g. 10.0.0.5:6379)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as error:
        raise AgentBalanceError(
            f"no Ray head answers at {address} ({error}); start one with `ray start --head --port {port}`"
        ) from None


def _auth_hint(error: BaseException) -> str:
    """Ray 2.59+ clusters started by `ray start` ask for a token; a driver without one is told how to send it."""
    causes = []
    while error is not None:
        causes.append(str(error))
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    if not any("InvalidAuthToken" in text or "Authentication token" in text for text in causes):
        return ""
    return (
        ". The cluster uses token authentication: set RAY_AUTH_MODE=token where you run agentbalance, with the "
        "cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token (`ray get-auth-token` on the head prints it)"
    )


def _apply(function: Callable[[Item], Result], item: Item) -> Result:
    """What a Ray task runs: one unit (Ray takes a function, not a `functools.partial` of one)."""
    return function(item)


def _result(ray: Any, reference: Any) -> Any:
    """A finished task's value; a user error raised in a worker comes back as that error, its message intact."""
    try:
        return ray.get(reference)
    except ray.exceptions.RayTaskError as error:
        if isinstance(error.cause, AgentBalanceError):
            raise AgentBalanceError(str(error.cause)) from None
        raise  # a bug in a unit: its traceback is what a developer needs
    except ray.exceptions.RayError as error:  # a worker or a node died, or the cluster went away
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise AgentBalanceError(
            f"Ray lost a unit ({reason}); rerun the same command to resume: finished units are kept"
        ) from None
