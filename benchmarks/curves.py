"""The project's Tables 1 and 3: `agentbalance curve` on every world and seed, summarised.

Runs the CLI itself (so the published numbers come from the user's command), one output folder per
(world, seed) under --out (resumable: rerun to finish an interrupted sweep), then averages each
method's summary row over the seeds (mean and min-max spread) into benchmarks/results/curves.json: every
column of summary.csv, the gains over the single LLM (gain_log_tok, gain_log_lat, in points) included.
Run: .venv/bin/python benchmarks/curves.py --methods all --seeds 0,1,2
     .venv/bin/python benchmarks/curves.py --methods ablations --worlds sim,mmlu-pro-dev --name ablations
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
WORLDS = ("sim", "mmlu-pro-dev", "gsm8k-reasoning-dev", "routerbench-arc-challenge", "routerbench-mbpp")


def world_spec(name: str) -> str | None:
    if name == "sim":
        return "sim"
    return f"replay:{SHARED / name}" if (SHARED / name).is_dir() else None


def run(world: str, spec: str, seed: int, methods: str, points: int, out: Path) -> dict[str, object]:
    folder = out / f"{world}-seed{seed}"
    command = [sys.executable, "-m", "agentbalance.cli", "curve", "--world", spec, "--methods", methods,
               "--points", str(points), "--seed", str(seed), "--out", str(folder)]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    with (folder / "summary.csv").open(encoding="utf-8") as handle:
        summary = {row.pop("method"): {k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)}
    seconds = time.perf_counter() - started
    brief = {m: (round(r["AUC_tok"], 3), round(r["gain_log_tok"], 1)) for m, r in summary.items()}
    print(world, seed, f"{seconds:.0f} s", "(AUC_tok, gain_log_tok):", brief, flush=True)
    return {"world": world, "seed": seed, "seconds": round(seconds, 1), "summary": summary}


def aggregate(runs: list[dict[str, object]]) -> dict[str, dict[str, dict[str, list[float] | float]]]:
    """world -> method -> metric -> {mean, min, max} over seeds."""
    table: dict[str, dict[str, dict[str, list[float]]]] = {}
    for item in runs:
        for method, row in item["summary"].items():  # type: ignore[union-attr]
            cell = table.setdefault(str(item["world"]), {}).setdefault(method, {})
            for metric, value in row.items():
                cell.setdefault(metric, []).append(value)
    return {
        world: {
            method: {m: {"mean": float(np.mean(v)), "min": min(v), "max": max(v), "n": len(v)} for m, v in row.items()}
            for method, row in methods.items()
        }
        for world, methods in table.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--methods", default="all")
    parser.add_argument("--worlds", default=",".join(WORLDS))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--out", default="runs/benchmark-curves")
    parser.add_argument("--name", default="curves")
    args = parser.parse_args()
    runs = []
    for world in args.worlds.split(","):
        spec = world_spec(world)
        if spec is None:
            print(f"skipping {world}: {SHARED / world} is absent", flush=True)
            continue
        for seed in (int(s) for s in args.seeds.split(",")):
            runs.append(run(world, spec, seed, args.methods, args.points, Path(args.out) / args.name))
    report = {
        "command": "python benchmarks/curves.py " + " ".join(sys.argv[1:]),
        "runs": runs,
        "aggregate": aggregate(runs),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
