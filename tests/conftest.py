"""Shared fixtures: paths of the shipped data and of the optional replay worlds in ../shared/data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agentbalance.experiment import Experiment

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
REPLAY_WORLDS = (
    "gsm8k-reasoning-dev",
    "mmlu-pro-dev",
    "routerbench-arc-challenge",
    "routerbench-mbpp",
    "routerbench-winograde",
)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"replay worlds not available: {SHARED_DATA} is absent (a fresh clone has no ../shared)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test writes to the user's real cache directory."""
    monkeypatch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def small_experiment(tmp_path_factory: pytest.TempPathFactory) -> Experiment:
    """A small simulated-world Experiment (48 / 16 / 32 questions), shared by the evaluation tests."""
    from agentbalance.experiment import Experiment, ExperimentSpec

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path_factory.mktemp("experiment-cache")))
        return Experiment.open(ExperimentSpec(sizes=(48, 16, 32)))


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """Tiny policies on a shared 2-core machine: a second torch thread only adds contention."""
    from agentbalance.train.build import one_torch_thread

    with one_torch_thread():
        yield


def fitting_cache(experiment: Experiment, methods: dict[str, Any], config: object) -> Callable[[str, str], list[Any]]:
    """Greedy MAS on the test split per (method, setting), each method fitted once per setting."""
    cache: dict[tuple[str, str], list[Any]] = {}

    def masses(name: str, setting: str) -> list[Any]:
        if (name, setting) not in cache:
            cache[name, setting] = methods[name](config).fit(experiment, setting)(experiment.splits.test)
        return cache[name, setting]

    return masses
