"""Crash and resume: a `build` killed mid-way (SIGKILL) and rerun finishes with the same result, pays for
no LLM call twice, and never trusts a torn checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.loopback_server import LoopbackServer
from tests.test_cli_build import agentbalance

pytestmark = pytest.mark.slow  # builds, trains or sweeps: left out of `make test-fast`

SMALL = ["--train", "16", "--val", "8", "--test", "8", "--epochs", "2", "--restarts", "2"]
LIVE = ["--train", "8", "--val", "4", "--test", "4", "--epochs", "2", "--restarts", "2"]  # every question is paid


def build_args(out: Path, *extra: str, sizes: list[str] = SMALL) -> list[str]:
    return ["build", "--budget-tok", "0.5", *sizes, *extra, "--out", str(out), "--json"]


def kill_after_first_restart(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    """Start `agentbalance *args`, SIGKILL it as soon as its first restart checkpoint exists."""
    out = Path(args[args.index("--out") + 1])
    process = subprocess.Popen(
        [sys.executable, "-m", "agentbalance.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not (out / "checkpoints" / "restart-0.json").is_file():
        assert process.poll() is None, "the build ended before its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint within 5 minutes"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (out / "metrics.json").is_file(), "killed too late to test a resume"


def outcome(out: Path) -> tuple[dict[str, object], dict[str, torch.Tensor]]:
    metrics = json.loads((out / "metrics.json").read_text())
    metrics.pop("seconds")
    return metrics, torch.load(out / "controller.pt", weights_only=True)


def same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """One uninterrupted build, shared: its run folder (copy it before changing it) and its --json output.
    A module fixture runs before the per-test cache isolation, so it names its own empty cache: no test
    writes to the user's real one."""
    cwd = tmp_path_factory.mktemp("reference")
    done = agentbalance(*build_args(cwd / "run"), cwd=cwd, env={"AGENTBALANCE_CACHE_DIR": str(cwd / "cache")})
    assert done.returncode == 0, done.stderr
    return cwd / "run", json.loads(done.stdout)


def test_a_killed_build_resumes_to_the_same_controller(reference, tmp_path: Path) -> None:
    folder, printed = reference
    kill_after_first_restart(build_args(tmp_path / "resumed"), tmp_path)
    resumed = agentbalance(*build_args(tmp_path / "resumed"), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed: 1 of 2 training runs restored" in resumed.stderr
    assert json.loads(resumed.stdout) | {"out": ""} == printed | {"out": ""}
    metrics, state = outcome(tmp_path / "resumed")
    expected_metrics, expected_state = outcome(folder)
    assert metrics == expected_metrics and same_state(state, expected_state)


def test_a_torn_checkpoint_is_detected_and_that_restart_trained_again(reference, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(reference[0], out)
    expected = outcome(out)
    weights = out / "checkpoints" / "restart-0.pt"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a torn write
    (out / "metrics.json").unlink()
    again = agentbalance(*build_args(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resumed: 1 of 2 training runs restored" in again.stderr  # restart 1 came from its checkpoint
    metrics, state = outcome(out)
    assert metrics == expected[0] and same_state(state, expected[1])


def test_other_options_never_reuse_a_checkpoint_nor_replace_a_finished_build(reference, tmp_path: Path) -> None:
    """Over a finished build of other options `build` refuses (it would lose that controller); over the
    checkpoints of a killed one it trains afresh, reusing none of them."""
    out = tmp_path / "run"
    shutil.copytree(reference[0], out)
    other = ["build", "--budget-tok", "0.2", *SMALL, "--out", str(out)]
    refused = agentbalance(*other, cwd=tmp_path)
    assert refused.returncode == 2 and "already holds a controller built with other options" in refused.stderr
    assert json.loads((out / "config.json").read_text())["budget"]["tok"] == 0.5  # untouched
    (out / "controller.pt").unlink()  # as a build killed before it wrote its controller leaves it
    again = agentbalance(*other, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resumed" not in again.stdout + again.stderr
    assert json.loads((out / "config.json").read_text())["budget"]["tok"] == 0.2


def test_a_killed_live_build_pays_for_no_call_twice(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + 4 - {i}?", "answer": "4"}) + "\n"
                for i in range(20)),
        encoding="utf-8",
    )  # fmt: skip
    env = {"AGENTBALANCE_API_KEY": "sk-loopback"}
    with LoopbackServer(api_keys={"sk-loopback"}) as server:

        def live(out: str, cache: str) -> list[str]:  # pools 0-1 only: fewer templates to pay for, the same resume path
            return build_args(tmp_path / out, "--world", "live", "--base-url", server.base_url, "--cache-dir",
                              str(tmp_path / cache), "--task", "jsonl", "--data", str(questions), "--max-pool", "1",
                              sizes=LIVE)  # fmt: skip

        done = agentbalance(*live("reference", "cache-a"), cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        uninterrupted = server.count()
        kill_after_first_restart(live("resumed", "cache-b"), tmp_path, env)
        done = agentbalance(*live("resumed", "cache-b"), cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert server.count() - uninterrupted == uninterrupted, "the killed run and its rerun paid for a call twice"


def test_a_killed_curve_sweep_resumes_to_the_same_points(tmp_path: Path) -> None:
    args = ["curve", "--methods", "single,random,agentprune-style", "--points", "3",
            "--train", "24", "--val", "12", "--test", "12"]  # fmt: skip
    reference = agentbalance(*args, "--out", str(tmp_path / "reference"), cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "killed"
    process = subprocess.Popen(
        [sys.executable, "-m", "agentbalance.cli", *args, "--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not (out / "curve.csv").is_file() or len((out / "curve.csv").read_text().splitlines()) < 9:
        assert process.poll() is None and time.monotonic() < deadline, "the sweep ended before it could be killed"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    resumed = agentbalance(*args, "--out", str(out), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "points resumed" in resumed.stdout.replace("\n", " ")
    assert (out / "curve.csv").read_text() == (tmp_path / "reference" / "curve.csv").read_text()
    assert (out / "summary.csv").read_text() == (tmp_path / "reference" / "summary.csv").read_text()
