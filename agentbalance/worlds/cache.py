"""Persistent response cache of live calls (sqlite): a rerun or a crashed sweep replays what it already paid for.

It must never store an API key or a header (keys hash request content only), nor crash a run on a corrupt row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentbalance import shared_sqlite
from agentbalance.errors import AgentBalanceError

log = logging.getLogger(__name__)

KEY_VERSION = 1  # bump when the meaning of a key changes: old rows then simply miss
BUSY_TIMEOUT_S = shared_sqlite.BUSY_TIMEOUT_S  # how long a writer waits for another process's transaction


def cache_key(
    base_url: str, model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], sample: int = 0
) -> str:
    """SHA-256 of the canonical JSON of what decides an answer: endpoint, model, messages, request parameters,
    and which sample of them it is (k > 0: the same request asked again; sample 0's key is the key without it,
    so existing caches still hit).

    Never pass a key or a header here: the hash is of content only, so two users' caches agree.
    """
    document: dict[str, Any] = {
        "v": KEY_VERSION,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "messages": [dict(m) for m in messages],
        "params": dict(params),
    }
    if sample:
        document["sample"] = sample
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """What a live call returned: enough to rebuild its Completion with the original usage and latency."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    latency_s: float  # measured wall seconds of the original successful call
    usage_estimated: bool = False  # the endpoint reported no usage; tokens are characters / 4

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, value: str) -> CachedResponse:
        """Strict: a row with a missing or mistyped field is rejected (ValueError), never half-read."""
        data = json.loads(value)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        ints = ("prompt_tokens", "completion_tokens", "reasoning_tokens")
        if not isinstance(data.get("text"), str):
            raise ValueError("text is not a string")
        for name in ints:
            if not isinstance(data.get(name), int) or isinstance(data.get(name), bool) or data[name] < 0:
                raise ValueError(f"{name} is not a non-negative integer")
        if not isinstance(data.get("latency_s"), int | float) or data["latency_s"] < 0:
            raise ValueError("latency_s is not a non-negative number")
        return cls(
            text=data["text"],
            prompt_tokens=data["prompt_tokens"],
            completion_tokens=data["completion_tokens"],
            reasoning_tokens=data["reasoning_tokens"],
            latency_s=float(data["latency_s"]),
            usage_estimated=bool(data.get("usage_estimated", False)),
        )


def _checksum(key: str, value: str) -> str:
    return hashlib.sha256(f"{key}\0{value}".encode()).hexdigest()


class ResponseCache:
    """key -> CachedResponse in one sqlite file (WAL): one transaction per insert, safe across threads and processes
    of one node (busy timeout, then retries: shared_sqlite.py); never on NFS.

    Every row carries a checksum of (key, value); a row that fails it is treated as a miss and
    overwritten by the next `put`. Errors of the database at run time are logged and turn into
    misses / skipped writes: a cache must never stop a run.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.corrupt_rows = 0  # rows ignored because they failed the checksum or did not parse
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise AgentBalanceError(f"cannot create the response cache folder {self.path.parent}: {error}") from None
        try:
            self._db = self._open()
        except sqlite3.OperationalError as error:  # e.g. locked by another process beyond the retries: not corrupt
            raise AgentBalanceError(f"cannot open the response cache {self.path}: {error}") from None
        except sqlite3.DatabaseError as error:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            log.warning("response cache %s is unreadable (%s); moved aside to %s", self.path, error, aside)
            try:
                self.path.rename(aside)
                self._db = self._open()
            except (OSError, sqlite3.Error) as again:
                raise AgentBalanceError(f"cannot open the response cache {self.path}: {again}") from None
        except OSError as error:
            raise AgentBalanceError(f"cannot open the response cache {self.path}: {error}") from None

    def _open(self) -> sqlite3.Connection:
        db = shared_sqlite.connect(self.path, check_same_thread=False)
        try:
            shared_sqlite.retrying(
                lambda: db.execute(
                    "CREATE TABLE IF NOT EXISTS responses ("
                    "key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL, created REAL NOT NULL)"
                ),
                f"{self.path}: create",
            )
        except sqlite3.Error:
            db.close()
            raise
        return db

    def get(self, key: str) -> CachedResponse | None:
        """The cached response, or None on a miss, a corrupt row or a database error."""
        try:
            with self._lock:
                row = shared_sqlite.retrying(
                    lambda: self._db.execute("SELECT value, checksum FROM responses WHERE key = ?", (key,)).fetchone(),
                    f"{self.path}: read",
                )
        except sqlite3.Error as error:
            log.warning("response cache %s: read failed (%s); treating as a miss", self.path, error)
            return None
        if row is None:
            return None
        value, checksum = row
        try:
            if not isinstance(value, str) or checksum != _checksum(key, value):
                raise ValueError("checksum mismatch")
            return CachedResponse.from_json(value)
        except ValueError as error:
            self.corrupt_rows += 1
            log.warning("response cache %s: ignoring a corrupt row (%s); it will be overwritten", self.path, error)
            return None

    def put(self, key: str, response: CachedResponse) -> None:
        """Store (or overwrite) one response in its own transaction; a failure is logged, never raised."""
        value = response.to_json()
        try:
            with self._lock:
                shared_sqlite.write(
                    self._db,
                    lambda db: db.execute(
                        "INSERT OR REPLACE INTO responses (key, value, checksum, created) VALUES (?, ?, ?, ?)",
                        (key, value, _checksum(key, value), time.time()),
                    ),
                    f"{self.path}: write",
                )
        except sqlite3.Error as error:
            log.warning("response cache %s: write failed (%s); the response is not cached", self.path, error)

    def __len__(self) -> int:
        with self._lock:
            return int(
                shared_sqlite.retrying(
                    lambda: self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0], f"{self.path}: count"
                )
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
