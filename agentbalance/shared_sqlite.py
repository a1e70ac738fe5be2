"""sqlite files that several processes of one node read and write at once (the response and embedding caches).

WAL journal, a busy timeout, and retries when sqlite still answers "database is locked" / SQLITE_BUSY.
It must never be relied on over NFS or any filesystem without working POSIX locks: sqlite's locking is
not safe there. Only the standard library and agentbalance.errors may be imported here (tests load this
module without the rest of the package).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 30.0  # how long one statement waits for another process's write transaction
BUSY_RETRIES = 5  # then a statement still refused as busy is retried this many times
RETRY_PAUSE_S = 0.05  # before the first retry; doubled before each next one

T = TypeVar("T")


def is_busy(error: BaseException) -> bool:
    """sqlite's "database is locked" / "database is busy" (SQLITE_BUSY, SQLITE_LOCKED and their variants)."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return True
    text = str(error).lower()
    return "locked" in text or "busy" in text


def retrying(action: Callable[[], T], what: str, retries: int = BUSY_RETRIES, pause_s: float = RETRY_PAUSE_S) -> T:
    """`action()`, retried on busy errors (exponential pause); any other error, or the last busy one, is raised."""
    for attempt in range(retries + 1):
        try:
            return action()
        except sqlite3.OperationalError as error:
            if not is_busy(error) or attempt == retries:
                raise
            log.debug("%s: %s; retry %d of %d", what, error, attempt + 1, retries)
            time.sleep(pause_s * 2**attempt)
    raise AssertionError("unreachable")


def connect(path: Path, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode (write with `write`), WAL journal, synchronous=NORMAL, busy timeout.

    Switching a new file to WAL needs a moment's exclusive lock, so it is retried like any busy statement."""
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=check_same_thread, isolation_level=None)
    try:
        retrying(lambda: db.execute("PRAGMA journal_mode=WAL"), f"{path}: journal_mode")
        db.execute("PRAGMA synchronous=NORMAL")  # in WAL: durable across a crash of the process, not of the OS
    except sqlite3.Error:
        db.close()
        raise
    return db


def write(db: sqlite3.Connection, statements: Callable[[sqlite3.Connection], object], what: str) -> None:
    """Run `statements(db)` in one IMMEDIATE transaction (the write lock taken up front, so a reader never has
    to upgrade and deadlock), committed whole or rolled back whole; retried whole on busy errors."""

    def transaction() -> None:
        db.execute("BEGIN IMMEDIATE")
        try:
            statements(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        try:
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    retrying(transaction, what)
