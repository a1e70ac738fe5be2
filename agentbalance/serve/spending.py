"""Hard daily USD limits per server key, kept in a small sqlite file so that a restart does not forget the day's spend.

It must never store, log or echo a key: a key is known here only by `key_id`, a short SHA-256 digest of it.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType

from agentbalance import shared_sqlite
from agentbalance.errors import AgentBalanceError

ANONYMOUS = "anonymous"  # the one id of every request to a server without auth
KEY_ID_HEX = 16  # hex digits of the SHA-256 digest kept: 64 bits, ample to keep a server's few keys apart
KEEP_DAYS = 35  # days more than this before the latest one recorded are deleted when a ledger opens
COLUMNS = ("key_id", "day", "usd")
_KEY_ID = re.compile(rf"[0-9a-f]{{{KEY_ID_HEX}}}")


def key_id(key: str | None) -> str:
    """The id a key's spend is kept under: the first KEY_ID_HEX hex digits of its SHA-256, or ANONYMOUS when the
    server has no key. Unsalted, so one key has one id in every process; the server's keys are random tokens, so the
    digest reveals nothing a guess could use."""
    if key is None:
        return ANONYMOUS
    return hashlib.sha256(key.encode()).hexdigest()[:KEY_ID_HEX]


def _checked_id(identifier: str) -> str:
    """Refuse anything but a key_id, so that a raw key passed by mistake is never written; never echo it."""
    if identifier != ANONYMOUS and not _KEY_ID.fullmatch(identifier):
        raise ValueError("not a key id (pass key_id(key), never the key itself)")
    return identifier


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if now.tzinfo is None or now.utcoffset() is None:  # datetime.utcnow() and datetime.now() look alike: refuse both
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC))")
    return now.astimezone(UTC)


def utc_day(now: datetime | None = None) -> str:
    """The UTC date spend is counted under, ISO formatted (YYYY-MM-DD)."""
    return _utc(now).date().isoformat()


def seconds_to_reset(now: datetime | None = None) -> float:
    """Seconds from `now` to the next UTC midnight, when every key's day starts again at 0 (a Retry-After)."""
    moment = _utc(now)
    midnight = datetime.combine(moment.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return (midnight - moment).total_seconds()


class SpendLedger:
    """USD spent per (key id, UTC day) in one sqlite file, and whether a key may start another request today.

    Several processes (server workers) may share the file: WAL journal, a busy timeout and retries
    (shared_sqlite.py), one short IMMEDIATE transaction per charge; never on NFS. The limit is checked when a
    request starts and charged when it ends, so a day's spend can pass it by what is in flight when it is crossed.
    A database error at run time raises AgentBalanceError: an unrecorded charge would quietly lift the limit.
    """

    def __init__(self, path: Path, max_usd_per_day: float) -> None:
        if not (max_usd_per_day > 0 and math.isfinite(max_usd_per_day)):
            raise AgentBalanceError(f"--max-usd-per-day must be a positive number, got {max_usd_per_day}")
        self.path = Path(path)
        self.max_usd_per_day = float(max_usd_per_day)
        self._lock = threading.Lock()  # one connection, possibly used from a worker thread as well as the loop
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise AgentBalanceError(f"cannot create the spending ledger's folder {self.path.parent}: {error}") from None
        try:
            self._db = shared_sqlite.connect(self.path, check_same_thread=False)
        except sqlite3.OperationalError as error:  # a path sqlite cannot open or create, or locked past the retries
            raise AgentBalanceError(f"cannot open the spending ledger {self.path}: {error}") from None
        except sqlite3.DatabaseError as error:
            raise AgentBalanceError(self._unreadable(error)) from None
        try:
            self._prepare()
        except sqlite3.OperationalError as error:
            self._db.close()
            raise AgentBalanceError(f"cannot open the spending ledger {self.path}: {error}") from None
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise AgentBalanceError(self._unreadable(error)) from None

    def _unreadable(self, error: object) -> str:
        return (
            f"the spending ledger {self.path} is not a readable ledger ({error}); it is not replaced because it "
            "holds each key's spend for today: move it aside to start every key from 0"
        )

    def _prepare(self) -> None:
        """Create the table (or check an existing one is ours) and drop days KEEP_DAYS before the latest recorded
        (not before the clock's today: a clock set wrong for a moment must not wipe the ledger)."""

        def statements(db: sqlite3.Connection) -> None:
            db.execute(
                "CREATE TABLE IF NOT EXISTS spend ("
                "key_id TEXT NOT NULL, day TEXT NOT NULL, usd REAL NOT NULL, PRIMARY KEY (key_id, day))"
            )
            columns = tuple(row[1] for row in db.execute("PRAGMA table_info(spend)"))
            if columns != COLUMNS:
                raise sqlite3.DatabaseError(f"its table 'spend' has columns {columns}, not {COLUMNS}")
            db.execute("DELETE FROM spend WHERE day < date((SELECT MAX(day) FROM spend), ?)", (f"-{KEEP_DAYS} days",))

        shared_sqlite.write(self._db, statements, f"{self.path}: prepare")

    def spent(self, key_id: str, now: datetime | None = None) -> float:
        """USD charged to this key id on the UTC day of `now` (default: the current time)."""
        identifier, day = _checked_id(key_id), utc_day(now)
        try:
            with self._lock:
                row = shared_sqlite.retrying(
                    lambda: self._db.execute(
                        "SELECT usd FROM spend WHERE key_id = ? AND day = ?", (identifier, day)
                    ).fetchone(),
                    f"{self.path}: read",
                )
        except sqlite3.Error as error:
            raise AgentBalanceError(f"the spending ledger {self.path}: cannot read today's spend: {error}") from None
        return float(row[0]) if row is not None else 0.0

    def allowed(self, key_id: str, now: datetime | None = None) -> tuple[bool, float]:
        """Whether this key id may start a request (its day's spend is under the limit), and the seconds until
        the limit resets at the next UTC midnight (for a Retry-After header when it may not)."""
        moment = _utc(now)
        return self.spent(key_id, moment) < self.max_usd_per_day, seconds_to_reset(moment)

    def charge(self, key_id: str, usd: float, now: datetime | None = None) -> None:
        """Add a finished (or cancelled, partly paid) request's cost to this key id's UTC day, in one transaction."""
        identifier, day = _checked_id(key_id), utc_day(now)
        amount = float(usd)
        if not (amount >= 0 and math.isfinite(amount)):  # the server's own measurement: a bad one is a bug
            raise ValueError(f"a charge must be a finite non-negative number of USD, got {usd}")
        if amount == 0:
            return
        try:
            with self._lock:
                shared_sqlite.write(
                    self._db,
                    lambda db: db.execute(
                        "INSERT INTO spend (key_id, day, usd) VALUES (?, ?, ?) "
                        "ON CONFLICT (key_id, day) DO UPDATE SET usd = usd + excluded.usd",
                        (identifier, day, amount),
                    ),
                    f"{self.path}: charge",
                )
        except sqlite3.Error as error:
            raise AgentBalanceError(
                f"the spending ledger {self.path}: cannot record a charge of {amount} USD: {error}"
            ) from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SpendLedger:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
