"""What the studies over the development worlds share: where the replay worlds and the results live (the
studies' own, and the benchmarks' in benchmarks/results/), the replay worlds' names, and one world's experiments
per seed (the splits of `curve`). The replay worlds are not in the repository; a world absent from the data folder
is reported and skipped, never required."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path

from agentbalance.experiment import Experiment, ExperimentSpec

RESULTS = Path(__file__).resolve().parent / "results"
BENCHMARK_RESULTS = Path(__file__).resolve().parents[1] / "results"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
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


def sweep_arguments(description: str | None, worlds: Sequence[str], seeds: str) -> argparse.Namespace:
    """The command line every such script takes: --worlds, --seeds (comma-separated) and --data."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", default=",".join(worlds))
    parser.add_argument("--seeds", default=seeds)
    parser.add_argument("--data", type=Path, default=SHARED, help="the folder of the replay worlds")
    return parser.parse_args()


def sweep(args: argparse.Namespace) -> Iterator[tuple[str, Iterator[tuple[int, Experiment]]]]:
    """Each world of --worlds that is present, with its experiments per seed of --seeds."""
    seeds = [int(seed) for seed in args.seeds.split(",")]
    for world in args.worlds.split(","):
        spec = world_spec(world, args.data)
        if spec is not None:
            yield world, seed_experiments(spec, seeds)
