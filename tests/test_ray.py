"""`--executor ray` on a real Ray (no mocks): a local Ray started by the command, and a cluster started by
`ray start --head` on loopback. The same seed gives the same files as the local executor; a killed Ray sweep
resumes; a user's error in a worker is one error line; an unreachable cluster fails at once.

They run apart from the main suite (marker `ray`, `make test-ray`, about 2.5 minutes), as the real-server tests
do. CI runs them with AGENTBALANCE_REQUIRE_RAY=1, so there a missing Ray fails, never skips."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from agentbalance.errors import AgentBalanceError
from agentbalance.executors import ExecutorSpec
from tests.conftest import SEEDS_SWEEP, agentbalance_process
from tests.test_cli_build import agentbalance, one_error_line

pytestmark = [pytest.mark.slow, pytest.mark.ray]  # starts Ray: `make test-ray`, apart from the suite's 7 minutes

if os.environ.get("AGENTBALANCE_REQUIRE_RAY") != "1" and importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed: pip install 'agentbalance[ray]' (make test has it)", allow_module_level=True)

SWEEP = [*SEEDS_SWEEP, "--seeds", "0,1"]  # the `seeds_sweep` fixture's, run there with the local executor
BUILD = ["build", "--budget-tok", "0.5", "--train", "16", "--val", "8", "--test", "8", "--epochs", "1"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ray_command() -> str:
    return str(Path(sys.executable).with_name("ray"))


TOKEN = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "agentbalance-test-token-0123456789abcdef"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Ray head of 2 CPUs, as `ray start --head` starts one on a cluster, with token authentication (the
    default of `ray start` since Ray 2.59; the driver sends TOKEN); its address on loopback. It runs in its own
    process group (`--block`) and only that group is stopped: `ray stop` would stop every Ray on the machine."""
    port = free_port()
    head = subprocess.Popen(
        [ray_command(), "start", "--head", "--block", "--port", str(port), "--num-cpus", "2",
         "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", str(tmp_path_factory.mktemp("ray"))],
        env={**os.environ, **TOKEN}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            assert head.poll() is None, "ray start --head ended"
            assert time.monotonic() < deadline, "no Ray head within 2 minutes"
            time.sleep(0.2)
        time.sleep(2)  # the port answers before the head is ready for drivers
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(head.pid, signal.SIGINT)  # as Ctrl-C: `ray start --block` stops what it started (SIGTERM does not)
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def sweep_files(out: Path) -> dict[str, str]:
    names = ["summary.csv", *(f"seed-{s}/{f}" for s in (0, 1) for f in ("curve.csv", "summary.csv"))]
    return {name: (out / name).read_text() for name in names}


def test_a_killed_ray_sweep_resumes_to_the_local_numbers(cluster: str, seeds_sweep: Path, tmp_path: Path) -> None:
    """A sweep on the cluster, SIGKILLed after two units, rerun: the files of the local executor, to the byte."""
    out = tmp_path / "out"
    args = [*SWEEP, "--executor", "ray", "--address", cluster, "--out", str(out)]
    process = subprocess.Popen([sys.executable, "-m", "agentbalance.cli", *args], cwd=tmp_path,
                               env={**os.environ, **TOKEN}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    while len(_lines(out / "timings.csv")) < 3:  # the header and two finished units
        assert process.poll() is None, "the sweep ended before it could be killed"
        assert time.monotonic() < deadline, "no unit finished within 5 minutes"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = _lines(out / "timings.csv")
    assert len(finished) < 9, "killed too late to test a resume"
    done = agentbalance_process(*args, cwd=tmp_path, env=TOKEN)
    assert done.returncode == 0, done.stderr
    assert sweep_files(out) == sweep_files(seeds_sweep / "out")
    assert set(finished) <= set(_lines(out / "timings.csv"))  # finished units skipped: their rows untouched
    assert f"on the Ray cluster at {cluster} (2 CPUs)" in " ".join(done.stdout.split())
    assert "8/8" in done.stdout  # one progress bar: 4 units (base, 3 methods) x 2 seeds, across workers


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def test_build_restarts_on_a_local_ray_give_the_local_controller(tmp_path: Path) -> None:
    local = agentbalance(*BUILD, "--restarts", "2", "--out", str(tmp_path / "local"), "--json", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    on_ray = agentbalance(*BUILD, "--restarts", "2", "--executor", "ray", "--out", str(tmp_path / "ray"), "--json",
                          cwd=tmp_path)  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    assert "2 of 2 runs trained on a local Ray" in on_ray.stderr
    assert "resumed" not in on_ray.stderr  # trained there, not restored from an earlier build
    assert json.loads(on_ray.stdout) | {"out": ""} == json.loads(local.stdout) | {"out": ""}
    metrics = [json.loads((tmp_path / name / "metrics.json").read_text()) for name in ("local", "ray")]
    assert [m | {"seconds": 0} for m in metrics[:1]] == [m | {"seconds": 0} for m in metrics[1:]]
    states = [torch.load(tmp_path / name / "controller.pt", weights_only=True) for name in ("local", "ray")]
    assert states[0].keys() == states[1].keys() and all(torch.equal(states[0][k], states[1][k]) for k in states[0])


def test_a_users_error_in_a_worker_is_one_error_line(cluster: str, tmp_path: Path) -> None:
    """With Ray the driver never opens an experiment: a catalog missing where a worker looks fails there."""
    missing = tmp_path / "missing.yaml"
    args = [*SWEEP, "--catalog", str(missing), "--executor", "ray", "--address", cluster, "--out", str(tmp_path / "o")]
    one_error_line(agentbalance_process(*args, cwd=tmp_path, env=TOKEN), f"catalog file not found: {missing}")


def test_an_unreachable_cluster_is_one_error_before_anything_is_written(tmp_path: Path) -> None:
    started = time.monotonic()
    done = agentbalance(*SWEEP, "--executor", "ray", "--address", f"127.0.0.1:{free_port()}", "--out",
                        str(tmp_path / "out"), cwd=tmp_path)  # fmt: skip
    one_error_line(done, "no Ray head answers at 127.0.0.1:")
    assert time.monotonic() - started < 60 and not (tmp_path / "out").exists()


def test_executor_options_are_checked() -> None:
    with pytest.raises(AgentBalanceError, match="one of local, ray"):
        ExecutorSpec("dask")
    with pytest.raises(AgentBalanceError, match="use it with --executor ray"):
        ExecutorSpec("local", "127.0.0.1:6379")
    with pytest.raises(AgentBalanceError, match="HOST:PORT"):
        ExecutorSpec("ray", "somewhere").open().__enter__()


def test_without_ray_installed_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the package
    with pytest.raises(AgentBalanceError, match=r"pip install 'agentbalance\[ray\]'"):
        ExecutorSpec("ray").open().__enter__()


def test_a_cluster_that_asks_for_a_token_says_how_to_send_it(cluster: str, tmp_path: Path) -> None:
    """(Ray retries for 20 s by default; the test lets it try for 2.)"""
    done = agentbalance_process(*SWEEP, "--executor", "ray", "--address", cluster, "--out", str(tmp_path / "out"),
                                cwd=tmp_path, env={"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "",
                                                  "RAY_gcs_server_port_wait_time_s": "2"})  # fmt: skip
    one_error_line(done, "set RAY_AUTH_MODE=token")


def test_a_lost_ray_node_is_one_error_line_and_the_finished_units_stay(tmp_path: Path) -> None:
    """The raylet of the command's local Ray killed after its first unit (a node lost): one error line that
    says to rerun, and the finished unit still in timings.csv. (Ray notices in 2 s with these health checks.)"""
    out = tmp_path / "out"
    args = ["curve", "--methods", "single", "--points", "1", "--train", "24", "--val", "12", "--test", "16",
            "--seeds", "0,1,2,3", "--executor", "ray", "--out", str(out)]  # fmt: skip
    quick = {"RAY_health_check_period_ms": "200", "RAY_health_check_timeout_ms": "200",
             "RAY_health_check_failure_threshold": "2", "RAY_health_check_initial_delay_ms": "0"}  # fmt: skip
    driver = subprocess.Popen([sys.executable, "-m", "agentbalance.cli", *args], cwd=tmp_path, text=True,
                              env={**os.environ, **quick}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 300
    while len(_lines(out / "timings.csv")) < 2:
        assert driver.poll() is None, "the sweep ended before a unit finished"
        assert time.monotonic() < deadline, "no unit finished within 5 minutes"
        time.sleep(0.05)
    raylets = subprocess.run(["pgrep", "-P", str(driver.pid), "raylet"], capture_output=True, text=True).stdout
    assert raylets.split(), "the command started no raylet of its own"
    for pid in raylets.split():
        os.kill(int(pid), signal.SIGKILL)
    stdout, stderr = driver.communicate(timeout=120)
    done = subprocess.CompletedProcess(args, driver.returncode, stdout, stderr)
    said = stdout + stderr  # Ray prints its own messages on either
    # the raylet killed is the driver's own: Ray may end the command itself (exit 1, its own message) before
    # a unit's failure reaches the driver; what the user relies on then is the finished units kept
    ended_by_ray = driver.returncode == 1 and "Raylet is terminated" in said and "Traceback" not in said
    if not ended_by_ray:
        one_error_line(done, "rerun the same command to resume: finished units are kept")
        assert "Ray lost a unit" in stderr
    assert len(_lines(out / "timings.csv")) >= 2, "the finished unit is kept for the rerun"
