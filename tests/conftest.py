"""Shared fixtures: paths of the shipped data and of the optional replay worlds in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

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
def small_experiment(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - import kept lazy
    """A small simulated-world Experiment (48 / 16 / 32 questions), shared by the evaluation tests."""
    from agentbalance.experiment import Experiment
    from agentbalance.train.build import BuildSpec

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTBALANCE_CACHE_DIR", str(tmp_path_factory.mktemp("experiment-cache")))
        return Experiment.open(BuildSpec(sizes=(48, 16, 32)))
