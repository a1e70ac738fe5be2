"""What the benchmarks over the development worlds share: where the replay worlds and the results live, the
replay worlds' names, and one world's experiments per seed (the splits of `curve`). The replay worlds are not
in the repository; a world absent from the data folder is reported and skipped, never required."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from agentbalance.experiment import Experiment, ExperimentSpec

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
REPLAY_WORLDS = (
    "mmlu-pro-dev",
    "gsm8k-reasoning-dev",
    "date-mot-dev",
    "routerbench-arc-challenge",
    "routerbench-mbpp",
    "routerbench-winograde",
)


def world_spec(world: str, data: Path) -> str | None:
    """The `--world` of `world` ("sim" or a replay folder under `data`); None, with a message, if it is absent."""
    if world == "sim":
        return "sim"
    if (data / world).is_dir():
        return f"replay:{data / world}"
    print(f"{world}: not in {data}, skipped")
    return None


def seed_experiments(spec: str, seeds: Sequence[int]) -> Iterator[tuple[int, Experiment]]:
    """The world opened once per seed, as `curve --seeds` opens it."""
    for seed in seeds:
        yield seed, Experiment.open(ExperimentSpec(world=spec, seed=seed))
