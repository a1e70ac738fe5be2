"""The response cache and the embedding cache shared by parallel processes of one node: no error, no lost or
torn row (real sqlite files, real processes), and sqlite's busy answers retried."""

from __future__ import annotations

import logging
import multiprocessing
import random
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from agentbalance import shared_sqlite
from agentbalance.encoders import EmbeddingCache
from agentbalance.worlds.cache import CachedResponse, ResponseCache

PROCESSES = 4
WRITES = 300  # per process; each write is followed by reads of its own and the others' rows
DIMENSION = 384


class Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def response_of(process: int, i: int) -> CachedResponse:
    return CachedResponse(f"answer {process}-{i} " + "x" * (i % 97), i, 2 * i + process, i % 3, 0.01 * i)


def vector_of(process: int, i: int) -> np.ndarray:
    return np.random.default_rng(1000 * process + i).standard_normal(DIMENSION).astype(np.float32)


def hammer_responses(path: str, process: int) -> list[str]:
    """Write WRITES rows, reading each back and a random earlier row of another process; the problems found."""
    warnings = Warnings()
    logging.getLogger("agentbalance").addHandler(warnings)
    cache = ResponseCache(path)
    problems = []
    pick = random.Random(process)
    for i in range(WRITES):
        cache.put(f"p{process}-{i}", response_of(process, i))
        if cache.get(f"p{process}-{i}") != response_of(process, i):
            problems.append(f"own row p{process}-{i} lost or torn")
        other, j = pick.randrange(PROCESSES), pick.randrange(i + 1)
        found = cache.get(f"p{other}-{j}")
        if found is not None and found != response_of(other, j):  # None: not written yet by the other
            problems.append(f"row p{other}-{j} torn: {found}")
    if cache.corrupt_rows:
        problems.append(f"{cache.corrupt_rows} corrupt rows")
    cache.close()
    return problems + warnings.messages


def hammer_embeddings(path: str, process: int) -> list[str]:
    """The same for the embedding cache, in batches of 3 vectors per transaction."""
    warnings = Warnings()
    logging.getLogger("agentbalance").addHandler(warnings)
    cache = EmbeddingCache(Path(path))
    problems = []
    pick = random.Random(process)
    for start in range(0, WRITES, 3):
        batch = {f"p{process}-{i}": vector_of(process, i) for i in range(start, start + 3)}
        cache.put_many(batch)
        others = [f"p{pick.randrange(PROCESSES)}-{pick.randrange(start + 3)}" for _ in range(3)]
        found = cache.get_many([*batch, *others])
        for key in batch:
            if key not in found or not np.array_equal(found[key], batch[key]):
                problems.append(f"own vector {key} lost or torn")
        for key in others:
            other, i = (int(part) for part in key[1:].split("-"))
            if key in found and not np.array_equal(found[key], vector_of(other, i)):
                problems.append(f"vector {key} torn")
    cache.close()
    return problems + warnings.messages


def in_parallel(worker, path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        results = pool.starmap(worker, [(str(path), process) for process in range(PROCESSES)])
    return [problem for problems in results for problem in problems]


def test_parallel_processes_share_the_response_cache_without_errors_or_lost_rows(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    assert in_parallel(hammer_responses, path) == []
    cache = ResponseCache(path)
    assert len(cache) == PROCESSES * WRITES and cache.corrupt_rows == 0
    for process in range(PROCESSES):
        for i in range(WRITES):
            assert cache.get(f"p{process}-{i}") == response_of(process, i)
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_parallel_processes_share_the_embedding_cache_without_errors_or_lost_vectors(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    assert in_parallel(hammer_embeddings, path) == []
    cache = EmbeddingCache(path)
    keys = [f"p{process}-{i}" for process in range(PROCESSES) for i in range(WRITES)]
    found = cache.get_many(keys)
    assert len(found) == len(keys)
    for key in keys:
        process, i = (int(part) for part in key[1:].split("-"))
        assert np.array_equal(found[key], vector_of(process, i))
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_write_waits_for_another_processes_transaction_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # another writer, holding the lock for a while
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    release.start()
    started = time.perf_counter()
    cache.put_many({"k": vector_of(0, 0)})
    assert time.perf_counter() - started >= 0.4  # it waited ...
    assert np.array_equal(cache.get_many(["k"])["k"], vector_of(0, 0))  # ... and wrote
    release.join()
    holder.close()


def test_busy_answers_are_retried_and_other_errors_are_not() -> None:
    answers = [sqlite3.OperationalError("database is locked"), sqlite3.OperationalError("database is busy")]

    def flaky() -> str:
        if answers:
            raise answers.pop(0)
        return "done"

    assert shared_sqlite.retrying(flaky, "test", pause_s=0.001) == "done" and not answers

    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        shared_sqlite.retrying(always_locked, "test", retries=2, pause_s=0.001)
    calls = []

    def broken() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("no such table: nope")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        shared_sqlite.retrying(broken, "test", pause_s=0.001)
    assert len(calls) == 1
