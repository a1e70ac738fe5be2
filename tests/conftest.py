"""Shared fixtures: paths of the shipped data and of the optional replay worlds in ../shared/data."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agentbalance.encoders import TextEncoder
    from agentbalance.experiment import Experiment
    from agentbalance.train.build import Built

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
REPLAY_WORLDS = (
    "gsm8k-reasoning-dev",
    "mmlu-pro-dev",
    "routerbench-arc-challenge",
    "routerbench-mbpp",
    "routerbench-winograde",
)



def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker computes on one thread, it and the processes it starts: the workers are as many as the
    cores, and torch's default of a thread per core in each had them contend for the same cores (training a small
    controller while another worker ran took 17 s on two threads and 5 s on one, on 2 cores)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        import torch

        torch.set_num_threads(1)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"replay worlds not available: {SHARED_DATA} is absent (a fresh clone has no ../shared)")
    return SHARED_DATA


def across_workers(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A folder every pytest-xdist worker of this test run shares (the run's own temporary folder), or the
    session's own folder without workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if worker_id != "master" else base


@pytest.fixture(scope="session")
def shared_embeddings(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """One embedding store for the whole test run, every pytest-xdist worker's: an embedding depends only on its
    text, model and precision (its key), so tests that do not test the cache itself need not embed a question twice
    (the store is safe to share between processes: tests/test_shared_caches.py)."""
    folder = across_workers(tmp_path_factory, worker_id) / "shared-embeddings"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def _isolated_session_cache(tmp_path_factory: pytest.TempPathFactory, shared_embeddings: Path) -> Iterator[None]:
    """Module and session fixtures are set up before the per-test isolation below: they too never write to the
    user's real cache directory, and they share the session's embedding store (they re-embedded every question
    in a store of their own, or in the user's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path_factory.mktemp("session-cache")))
        patch.setenv("AGENTBALANCE_EMBEDDING_CACHE_DIR", str(shared_embeddings))
        yield


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shared_embeddings: Path
) -> None:
    """No test writes to the user's real cache directory; each test gets its own response cache, and
    the session's shared embedding store (CLI subprocesses inherit both)."""
    monkeypatch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("AGENTBALANCE_EMBEDDING_CACHE_DIR", str(shared_embeddings))


@pytest.fixture(scope="session")
def small_experiment(tmp_path_factory: pytest.TempPathFactory, shared_embeddings: Path) -> Experiment:
    """A small simulated-world Experiment (48 / 16 / 32 questions), shared by the evaluation tests."""
    from agentbalance.experiment import Experiment, ExperimentSpec

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path_factory.mktemp("experiment-cache")))
        patch.setenv("AGENTBALANCE_EMBEDDING_CACHE_DIR", str(shared_embeddings))
        return Experiment.open(ExperimentSpec(sizes=(48, 16, 32)))


SMALL_BUILD = ("--train", "40", "--val", "20", "--test", "20", "--epochs", "1", "--restarts", "1")


@pytest.fixture(scope="session")
def built_run(tmp_path_factory: pytest.TempPathFactory, shared_embeddings: Path) -> Built:
    """One small trained controller (simulated world, 40 / 20 / 20 questions, Tok 0.5 and Lat 60 budgets, 2 epochs,
    2 restarts) built once per session: the `Built` the training tests inspect, and the run folder every test of
    `run --model`, `evaluate`, `export` and `TrainedController` reads (and none writes: copy it first to change it)."""
    from agentbalance.budgets import Budget
    from agentbalance.experiment import ExperimentSpec
    from agentbalance.train.build import BuildSpec, build
    from agentbalance.train.config import TrainConfig

    out = tmp_path_factory.mktemp("trained-run") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTBALANCE_CACHE_DIR", str(out.parent / "cache"))
        patch.setenv("AGENTBALANCE_EMBEDDING_CACHE_DIR", str(shared_embeddings))
        spec = BuildSpec(ExperimentSpec(sizes=(40, 20, 20)), Budget(0.5, 60.0), TrainConfig(epochs=2), restarts=2)
        return build(spec, out)


@pytest.fixture(scope="session")
def trained_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The run folder of `built_run`, built once per test run: the first worker to need it builds it and the others
    wait for it and read the same folder (a build is the slowest set-up of the suite). Read it, never write."""
    from filelock import FileLock

    shared = across_workers(tmp_path_factory, worker_id) / "trained-run"
    shared.mkdir(parents=True, exist_ok=True)
    folder = shared / "run"
    with FileLock(str(shared / "build.lock")):
        if not folder.is_dir():
            built: Built = request.getfixturevalue("built_run")
            shutil.rmtree(shared / "partial", ignore_errors=True)
            shutil.copytree(built.out, shared / "partial")
            (shared / "partial").rename(folder)  # whole or absent, should a worker die mid-copy
    return folder


# a sweep of two seeds, small enough for the suite: with agentbalance, so that its training is compared too
SEEDS_SWEEP = ("curve", "--methods", "agentbalance,single,star", "--points", "2",
               "--train", "16", "--val", "8", "--test", "8", "--epochs", "1")  # fmt: skip


@pytest.fixture(scope="session")
def seeds_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`curve --seeds 0,1` with the local executor (`out/`), and beside it (`single-seed-1/`) the one-seed sweep of
    seed 1 it must agree with: the reference of the multi-seed tests and of the Ray tests. Read it, never write."""
    folder = tmp_path_factory.mktemp("seeds")
    done = agentbalance(*SEEDS_SWEEP, "--seeds", "0,1", "--out", str(folder / "out"), cwd=folder)
    assert done.returncode == 0, done.stderr
    alone = agentbalance(*SEEDS_SWEEP, "--seed", "1", "--out", str(folder / "single-seed-1"), cwd=folder)
    assert alone.returncode == 0, alone.stderr
    return folder


def agentbalance(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command line as a user runs it from `cwd` (relative paths resolve there), in this process: the
    fast path where a subprocess is not the point (`agentbalance_process` where it is)."""
    with contextlib.chdir(cwd):
        code, out, err = cli(*args, env={"COLUMNS": "160", **(env or {})})
    return subprocess.CompletedProcess(["agentbalance", *args], code, out, err)


def agentbalance_process(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The command line in a fresh Python process (`python -m agentbalance.cli`), for what only a process
    shows: start-up imports, environment-driven logging, signals."""
    return subprocess.run(
        [sys.executable, "-m", "agentbalance.cli", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The `agentbalance` command line in this process (exit code, stdout, stderr): the fast path for tests
    where a subprocess is not the point. An exception escaping it (a traceback for a user) fails the test."""
    from typer.testing import CliRunner

    from agentbalance.cli import app

    result = CliRunner().invoke(app, [str(arg) for arg in args], env={"COLUMNS": "200", **(env or {})})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{type(result.exception).__name__} escaped the CLI") from result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="session")
def encoder() -> TextEncoder:
    """One sentence encoder for the served models of every serve test (each would otherwise load the model); no
    disk cache, as `serve` keeps none."""
    from agentbalance.encoders import TextEncoder

    return TextEncoder(use_disk_cache=False)


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """Tiny policies on a shared 2-core machine: a second torch thread only adds contention."""
    from agentbalance.train.build import one_torch_thread

    with one_torch_thread():
        yield


def fitting_cache(experiment: Experiment, methods: dict[str, Any], config: object) -> Callable[[str, str], list[Any]]:
    """Greedy MAS on the test split per (method, setting), each method fitted once per setting."""
    cache: dict[tuple[str, str], list[Any]] = {}

    def systems(name: str, setting: str) -> list[Any]:
        if (name, setting) not in cache:
            cache[name, setting] = methods[name](config).fit(experiment, setting)(experiment.splits.test)
        return cache[name, setting]

    return systems


def write_panel_mas(path: Path, solvers: list[tuple[str, str, str]], decision: tuple[str, str, str]) -> Path:
    """A MAS file of solvers (id, role, backbone) that all feed one decision agent: the smallest MAS with a
    vote; returns `path`."""
    agents = [{"id": i, "role": role, "backbone": backbone} for i, role, backbone in [*solvers, decision]]
    edges = [[solver[0], decision[0]] for solver in solvers]
    path.write_text(json.dumps({"agents": agents, "edges": edges, "decision": decision[0]}), encoding="utf-8")
    return path


def write_math_questions(path: Path, count: int) -> Path:
    """`count` simple math questions as a query file (gold "4"), for live builds against a loopback server."""
    lines = (
        json.dumps({"id": f"q{i}", "question": f"What is {i} - {i} + 4?", "answer": "4", "domain": "math"}) + "\n"
        for i in range(count)
    )
    path.write_text("".join(lines), encoding="utf-8")
    return path


def assert_fit_is_reproducible(method: Any, experiment: Experiment, setting: str, fitted: list[Any]) -> None:
    """The same setting fitted again gives identical MAS whatever torch's global random state (re-seeded and
    consumed here), which the fit leaves as it was."""
    import torch

    torch.manual_seed(12345)
    torch.rand(100)
    before = torch.random.get_rng_state()
    again = method.fit(experiment, setting)(experiment.splits.test)
    assert torch.equal(torch.random.get_rng_state(), before), "the fit read or wrote torch's global random state"
    assert [m.to_json() for m in again] == [m.to_json() for m in fitted]
