"""API keys: read only from the environment or a file the user names, sent only in the Authorization header.

Never in a log line, a trace, an error, the response cache or a run folder: the tests below grep every
byte a live `run` and a live `build` write, and every log record at DEBUG level, for the key.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbalance.errors import AgentBalanceError
from agentbalance.worlds import LiveOptions, open_world
from agentbalance.worlds.live import LiveWorld
from tests.conftest import write_math_questions
from tests.loopback_server import LoopbackServer
from tests.test_cli_build import write_two_agent_mas
from tests.test_live_world import complete, write_catalog

KEY = "sk-secret-9f8e7d6c5b4a-DO-NOT-LEAK"
KEY_PIECES = (KEY, KEY[3:19], "9f8e7d6c5b4a")  # the key, and parts of it a redaction might miss


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(api_keys={KEY}) as running:
        yield running


def key_file(folder: Path, content: str | bytes, mode: int = 0o600) -> Path:
    path = folder / "openai.key"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    path.chmod(mode)
    return path


def leaks(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return [piece for piece in KEY_PIECES if piece in text]


def leaks_in_files(folder: Path) -> dict[str, list[str]]:
    """Every file under `folder` (sqlite WAL and journal files included) that holds the key or a piece of it."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and (pieces := leaks(path.read_bytes())):
            found[str(path)] = pieces
    return found


# ----------------------------------------------------------------------------- where keys come from


def test_a_key_file_the_user_names_is_used_and_named_never_quoted(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTBALANCE_API_KEY", raising=False)
    catalog = write_catalog(tmp_path)
    path = key_file(tmp_path, f"  {KEY}\n")  # surrounding whitespace and the final newline are not the key
    world = LiveWorld(catalog, base_url=server.base_url, api_key_file=path, cache_dir=tmp_path / "cache")
    assert complete(world, "tiny").answer == "4"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert world.endpoint(catalog["tiny"]).key_source == f"the key file {path}"
    assert not leaks(repr(world)) and not leaks(repr(world.endpoint(catalog["tiny"])))

    through_options = open_world("live", catalog, live=LiveOptions(base_url=server.base_url, api_key_file=path))
    assert isinstance(through_options, LiveWorld) and complete(through_options, "tiny").answer == "4"


def test_a_rejected_key_from_a_file_is_named_by_the_file(server: LoopbackServer, tmp_path: Path) -> None:
    path = key_file(tmp_path, "sk-wrong-key-from-a-file-1234")
    world = LiveWorld(write_catalog(tmp_path), base_url=server.base_url, api_key_file=path, cache_dir=tmp_path)
    with pytest.raises(AgentBalanceError, match=r"rejected the API key \(HTTP 401\).*the key file .*openai\.key"):
        complete(world, "tiny")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "is empty"),
        ("\n  \n", "is empty"),
        (f"{KEY}\n{KEY}\n", "must hold only the key, on one line"),
        (f"OPENAI_API_KEY={KEY} # mine", "must hold only the key, on one line"),
        (b"\xff\xfe" + KEY.encode(), "is not UTF-8 text"),
        ("x" * 5000, "larger than 4096 bytes"),
    ],
    ids=["empty", "blank", "two lines", "an env file", "not utf-8", "too large"],
)
def test_a_bad_key_file_is_one_clear_error_that_never_quotes_it(
    tmp_path: Path, content: str | bytes, expected: str
) -> None:
    path = key_file(tmp_path, content)
    with pytest.raises(AgentBalanceError, match=expected) as error:
        LiveWorld(write_catalog(tmp_path), base_url="http://127.0.0.1:9/v1", api_key_file=path, cache_dir=tmp_path)
    assert str(path) in str(error.value) and not leaks(str(error.value)) and "xxxx" not in str(error.value)
    assert "\n" not in str(error.value)


def test_a_missing_or_unreadable_key_file_or_two_key_sources_are_clear_errors(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    base = {"base_url": "http://127.0.0.1:9/v1", "cache_dir": tmp_path}
    with pytest.raises(AgentBalanceError, match=r"API key file not found: .*nowhere\.key"):
        LiveWorld(catalog, api_key_file=tmp_path / "nowhere.key", **base)  # type: ignore[arg-type]
    with pytest.raises(AgentBalanceError, match="is a directory"):
        LiveWorld(catalog, api_key_file=tmp_path, **base)  # type: ignore[arg-type]
    with pytest.raises(AgentBalanceError, match="an API key or an API key file, not both"):
        LiveWorld(catalog, api_key=KEY, api_key_file=key_file(tmp_path, KEY), **base)  # type: ignore[arg-type]
    if os.geteuid() != 0:  # root reads any file
        unreadable = key_file(tmp_path, KEY, mode=0o000)
        with pytest.raises(AgentBalanceError, match="cannot read the API key file"):
            LiveWorld(catalog, api_key_file=unreadable, **base)  # type: ignore[arg-type]


def test_a_key_file_others_can_read_is_used_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = key_file(tmp_path, KEY, mode=0o644)
    with caplog.at_level(logging.WARNING, logger="agentbalance"):
        LiveWorld(write_catalog(tmp_path), base_url="http://127.0.0.1:9/v1", api_key_file=path, cache_dir=tmp_path)
    assert "can be read by other users" in caplog.text and not leaks(caplog.text)


def test_a_catalog_never_holds_a_key(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match="must name an environment variable") as error:
        write_catalog(tmp_path, {"name": "oops", "price_in": 1, "price_out": 1, "api_key_env": KEY})
    assert not leaks(str(error.value))
    with pytest.raises(AgentBalanceError, match="api_key"):  # no field for a key itself
        write_catalog(tmp_path, {"name": "oops", "price_in": 1, "price_out": 1, "api_key": KEY})


# ----------------------------------------------------------------------------- what a live run leaves behind


def questions(folder: Path) -> Path:
    return write_math_questions(folder / "q.jsonl", 12)


@pytest.mark.slow
def test_a_live_run_and_build_write_the_key_nowhere(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from agentbalance.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path / "home-cache"))
    env = {"AGENTBALANCE_API_KEY": KEY, "COLUMNS": "160"}
    live = ["--world", "live", "--base-url", server.base_url, "--cache-dir", str(tmp_path / "cache")]
    mas = tmp_path / "mas.json"
    write_two_agent_mas(mas)
    caplog.set_level(logging.DEBUG)  # every record of every library, the SDK's and the HTTP client's included
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "--mas", str(mas), *live, "--input", str(questions(tmp_path)), "--json"], env=env)
    assert ran.exit_code == 0, ran.output
    built = runner.invoke(
        app,
        [
            "build",
            "--budget-tok",
            "1",
            *live,
            "--task",
            "jsonl",
            "--data",
            "q.jsonl",
            *("--train", "6", "--val", "3", "--test", "3", "--epochs", "1", "--restarts", "1"),
            "--out",
            "run",
            "--json",
        ],
        env=env,
    )
    assert built.exit_code == 0, built.output
    assert (tmp_path / "run" / "config.json").is_file() and (tmp_path / "cache" / "responses.sqlite").is_file()
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests), "the key was used"

    assert leaks_in_files(tmp_path) == {}
    assert not leaks(ran.stdout + ran.stderr + built.stdout + built.stderr)
    records = " ".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert caplog.records and not leaks(records)
    cache = b"".join(p.read_bytes() for p in (tmp_path / "cache").glob("responses.sqlite*")).lower()
    assert b"authorization" not in cache and b"bearer" not in cache


@pytest.mark.slow
def test_a_live_run_with_the_sdk_debug_log_on_prints_no_key(server: LoopbackServer, tmp_path: Path) -> None:
    mas = tmp_path / "mas.json"
    mas.write_text(
        json.dumps({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "decision": "d"})
    )
    command = [sys.executable, "-m", "agentbalance.cli", "run", "--mas", str(mas), "--world", "live"]
    command += ["--base-url", server.base_url, "--cache-dir", str(tmp_path / "cache"), "--json", "What is 2 + 2?"]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "AGENTBALANCE_API_KEY": KEY, "OPENAI_LOG": "debug", "AGENTBALANCE_CACHE_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "HTTP Request: POST" in done.stderr or "Request options" in done.stderr, "the SDK's debug log was on"
    assert not leaks(done.stdout + done.stderr)
    assert leaks_in_files(tmp_path) == {}
