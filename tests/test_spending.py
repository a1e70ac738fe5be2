"""Daily USD limits per key: the day's spend survives a restart, the next UTC day starts at 0, Retry-After is the
time to UTC midnight, keys are apart, no key ever reaches the file, and a bad file is a user error naming it."""

from __future__ import annotations

import multiprocessing
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from agentbalance.errors import AgentBalanceError
from agentbalance.serve.spending import ANONYMOUS, SpendLedger, key_id, seconds_to_reset

NOON = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
KEY = "sk-agentbalance-0123456789abcdef-secret"


def test_a_restarted_ledger_keeps_the_days_spend(tmp_path: Path) -> None:
    path = tmp_path / "spend.sqlite"
    with SpendLedger(path, max_usd_per_day=1.0) as ledger:
        ledger.charge(key_id(KEY), 0.25, NOON)
        ledger.charge(key_id(KEY), 0.5, NOON + timedelta(hours=1))
    with SpendLedger(path, max_usd_per_day=1.0) as restarted:
        assert restarted.spent(key_id(KEY), NOON + timedelta(hours=2)) == pytest.approx(0.75)
        assert restarted.allowed(key_id(KEY), NOON + timedelta(hours=2))[0]
        restarted.charge(key_id(KEY), 0.25, NOON + timedelta(hours=3))
        assert not restarted.allowed(key_id(KEY), NOON + timedelta(hours=3))[0]


def test_the_next_utc_day_starts_at_zero(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger:
        late = datetime(2025, 3, 1, 23, 59, 59, tzinfo=UTC)
        ledger.charge(key_id(KEY), 2.0, late)
        assert ledger.allowed(key_id(KEY), late)[0] is False
        assert ledger.spent(key_id(KEY), late + timedelta(seconds=1)) == 0.0
        assert ledger.allowed(key_id(KEY), late + timedelta(seconds=1))[0] is True
        assert ledger.spent(key_id(KEY), late) == pytest.approx(2.0)  # that day is still on record


def test_days_are_utc_dates_whatever_the_clock_s_zone(tmp_path: Path) -> None:
    paris = timezone(timedelta(hours=2))
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger:
        ledger.charge(key_id(KEY), 0.5, datetime(2025, 3, 2, 1, 0, tzinfo=paris))  # 2025-03-01 23:00 UTC
        assert ledger.spent(key_id(KEY), datetime(2025, 3, 1, 22, 0, tzinfo=UTC)) == pytest.approx(0.5)
        assert ledger.spent(key_id(KEY), datetime(2025, 3, 2, 0, 30, tzinfo=UTC)) == 0.0


def test_retry_after_is_the_seconds_to_the_next_utc_midnight(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=0.1) as ledger:
        moment = datetime(2025, 3, 1, 23, 59, 30, tzinfo=UTC)
        ledger.charge(key_id(KEY), 0.1, moment)
        assert ledger.allowed(key_id(KEY), moment) == (False, 30.0)
        assert ledger.allowed(key_id(KEY), NOON) == (False, 12 * 3600.0)
    assert seconds_to_reset(datetime(2025, 3, 1, 0, 0, tzinfo=UTC)) == 24 * 3600.0
    assert seconds_to_reset(datetime(2025, 3, 2, 1, 0, tzinfo=timezone(timedelta(hours=2)))) == 3600.0
    assert 0 < seconds_to_reset() <= 24 * 3600.0


def test_a_key_is_refused_once_its_day_reaches_the_limit(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger:
        ledger.charge(key_id(KEY), 0.999, NOON)
        assert ledger.allowed(key_id(KEY), NOON)[0]
        ledger.charge(key_id(KEY), 0.001, NOON)
        assert not ledger.allowed(key_id(KEY), NOON)[0]


def test_two_keys_are_apart(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger:
        ledger.charge(key_id(KEY), 1.5, NOON)
        ledger.charge(key_id("another-key"), 0.2, NOON)
        assert ledger.spent(key_id(KEY), NOON) == pytest.approx(1.5)
        assert ledger.spent(key_id("another-key"), NOON) == pytest.approx(0.2)
        assert ledger.spent(key_id(None), NOON) == 0.0
        assert not ledger.allowed(key_id(KEY), NOON)[0]
        assert ledger.allowed(key_id("another-key"), NOON)[0]


def test_a_server_without_auth_has_one_anonymous_id_and_a_key_a_short_digest() -> None:
    assert key_id(None) == key_id(None) == ANONYMOUS
    assert key_id(KEY) == key_id(KEY) != key_id(KEY + "x")
    assert len(key_id(KEY)) == 16 and int(key_id(KEY), 16) >= 0
    assert key_id(KEY) not in KEY and key_id(KEY) != ANONYMOUS


def test_the_key_is_never_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "spend.sqlite"
    ledger = SpendLedger(path, max_usd_per_day=1.0)
    ledger.charge(key_id(KEY), 0.3, NOON)

    def everything_on_disk() -> bytes:
        return b"".join(file.read_bytes() for file in sorted(tmp_path.iterdir()))  # the WAL file too

    while_open = everything_on_disk()
    ledger.close()
    after_close = everything_on_disk()
    for content in (while_open, after_close):
        assert key_id(KEY).encode() in content  # the read works: the id is there...
        assert KEY.encode() not in content  # ...and the key is not
        assert b"0123456789abcdef" not in content


def test_a_raw_key_passed_for_a_key_id_is_refused_without_being_echoed(tmp_path: Path) -> None:
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger:
        for action in (lambda: ledger.charge(KEY, 0.1, NOON), lambda: ledger.allowed(KEY, NOON)):
            with pytest.raises(ValueError) as caught:
                action()
            assert KEY not in str(caught.value)
    assert KEY.encode() not in (tmp_path / "spend.sqlite").read_bytes()


def test_an_unusable_path_is_a_user_error_naming_it(tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    with pytest.raises(AgentBalanceError, match="not-a-folder"):
        SpendLedger(a_file / "spend.sqlite", max_usd_per_day=1.0)
    with pytest.raises(AgentBalanceError, match="cannot open the spending ledger"):
        SpendLedger(tmp_path, max_usd_per_day=1.0)  # a folder, not a file


def test_a_corrupt_file_is_a_user_error_naming_it_and_is_left_in_place(tmp_path: Path) -> None:
    path = tmp_path / "spend.sqlite"
    garbage = b"this is not a database" * 300
    path.write_bytes(garbage)
    with pytest.raises(AgentBalanceError, match=r"spend\.sqlite is not a readable ledger"):
        SpendLedger(path, max_usd_per_day=1.0)
    assert path.read_bytes() == garbage


def test_another_programs_sqlite_file_is_not_taken_for_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE spend (who TEXT, amount REAL)")
    with pytest.raises(AgentBalanceError, match=r"other\.sqlite is not a readable ledger.*columns"):
        SpendLedger(path, max_usd_per_day=1.0)


@pytest.mark.parametrize("limit", [0.0, -1.0, float("nan"), float("inf")])
def test_a_limit_must_be_a_positive_number(tmp_path: Path, limit: float) -> None:
    with pytest.raises(AgentBalanceError, match="max-usd-per-day"):
        SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=limit)


@pytest.mark.parametrize("usd", [-0.01, float("nan"), float("inf")])
def test_a_nonsense_charge_is_a_bug_and_records_nothing(tmp_path: Path, usd: float) -> None:
    with SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger:
        with pytest.raises(ValueError):
            ledger.charge(key_id(KEY), usd, NOON)
        assert ledger.spent(key_id(KEY), NOON) == 0.0


def test_a_naive_datetime_is_refused_rather_than_guessed(tmp_path: Path) -> None:
    with (
        SpendLedger(tmp_path / "spend.sqlite", max_usd_per_day=1.0) as ledger,
        pytest.raises(ValueError, match="timezone-aware"),
    ):
        ledger.allowed(key_id(KEY), datetime(2025, 3, 1, 12, 0))


def test_old_days_are_dropped_when_a_ledger_opens(tmp_path: Path) -> None:
    path = tmp_path / "spend.sqlite"
    long_ago = datetime.now(UTC) - timedelta(days=400)
    with SpendLedger(path, max_usd_per_day=1.0) as ledger:
        ledger.charge(key_id(KEY), 0.5, long_ago)
        ledger.charge(key_id(KEY), 0.25)
        assert ledger.spent(key_id(KEY), long_ago) == pytest.approx(0.5)
    with SpendLedger(path, max_usd_per_day=1.0) as reopened:
        assert reopened.spent(key_id(KEY), long_ago) == 0.0
        assert reopened.spent(key_id(KEY)) == pytest.approx(0.25)


CHARGES = 100  # per process


def charge_many(path: str, which: int) -> None:
    with SpendLedger(Path(path), max_usd_per_day=1000.0) as ledger:
        for _ in range(CHARGES):
            ledger.charge(key_id("shared-key"), 0.01, NOON)
            ledger.charge(key_id(f"own-key-{which}"), 0.01, NOON)


def test_two_processes_charging_one_file_lose_no_charge(tmp_path: Path) -> None:
    path = tmp_path / "spend.sqlite"
    SpendLedger(path, max_usd_per_day=1000.0).close()
    context = multiprocessing.get_context("fork")  # spawn would import the server's dependencies again
    workers = [context.Process(target=charge_many, args=(str(path), which)) for which in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    with SpendLedger(path, max_usd_per_day=1000.0) as ledger:
        assert ledger.spent(key_id("shared-key"), NOON) == pytest.approx(2 * CHARGES * 0.01)
        for which in range(2):
            assert ledger.spent(key_id(f"own-key-{which}"), NOON) == pytest.approx(CHARGES * 0.01)
