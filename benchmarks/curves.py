"""The project's Tables 1 and 3: `agentbalance curve` on every world and seed, summarised.

Runs the CLI itself (so the published numbers come from the user's command): one `curve --seeds` sweep per
world under --out (resumable: rerun to finish an interrupted sweep; --executor ray runs its units, a method on
a seed, as Ray tasks, --address on an existing cluster), then averages each
method's summary row over the seeds (mean and min-max spread) into benchmarks/results/curves.json: every
column of summary.csv, the gains over the single LLM (gain_log_tok, gain_log_lat, in points) included.
Run: .venv/bin/python benchmarks/curves.py --methods all --seeds 0,1,2
     .venv/bin/python benchmarks/curves.py --methods ablations --worlds sim,mmlu-pro-dev --name ablations
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from agentbalance.evaluation.curve_files import read_summary, read_timings

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
WORLDS = ("sim", "mmlu-pro-dev", "gsm8k-reasoning-dev", "routerbench-arc-challenge", "routerbench-mbpp")


def world_spec(name: str) -> str | None:
    if name == "sim":
        return "sim"
    return f"replay:{SHARED / name}" if (SHARED / name).is_dir() else None


def run(world: str, spec: str, seeds: str, args: argparse.Namespace, out: Path) -> tuple[list[dict], dict]:
    """One `curve --seeds` sweep of a world: a run entry per seed (its summary rows, its units' seconds), and
    the sweep's own mean / min / max rows as method -> metric -> {mean, min, max, n}."""
    folder = out / world
    command = [sys.executable, "-m", "agentbalance.cli", "curve", "--world", spec, "--methods", args.methods,
               "--points", str(args.points), "--seeds", seeds, "--executor", args.executor,
               "--out", str(folder)]  # fmt: skip
    if args.address:
        command += ["--address", args.address]
    if args.menu_guard:
        command += ["--menu-guard"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    print(world, f"{time.perf_counter() - started:.0f} s", flush=True)
    rows = read_summary(folder / "summary.csv")
    timings = read_timings(folder / "timings.csv")
    runs = []
    for seed in dict.fromkeys(str(row["seed"]) for row in rows if str(row["seed"]).lstrip("-").isdigit()):
        summary = {
            str(row["method"]): {k: v for k, v in row.items() if k not in ("method", "seed")}
            for row in rows
            if row["seed"] == seed
        }
        seconds = sum(t.seconds for t in timings if t.seed == int(seed))
        brief = {m: (round(float(r["AUC_tok"]), 3), round(float(r["gain_log_tok"]), 1)) for m, r in summary.items()}
        print(world, seed, "(AUC_tok, gain_log_tok):", brief, flush=True)
        runs.append({"world": world, "seed": int(seed), "seconds": round(seconds, 1), "summary": summary})
    statistics: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        if row["seed"] in ("mean", "min", "max"):
            for metric, value in row.items():
                if metric not in ("method", "seed"):
                    cell = statistics.setdefault(str(row["method"]), {}).setdefault(metric, {"n": len(runs)})
                    cell[str(row["seed"])] = float(value)  # type: ignore[arg-type]
    return runs, statistics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--methods", default="all")
    parser.add_argument("--worlds", default=",".join(WORLDS))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--out", default="runs/benchmark-curves")
    parser.add_argument("--name", default="curves")
    parser.add_argument("--executor", default="local", choices=("local", "ray"), help="where the units run")
    parser.add_argument("--address", default=None, help="--executor ray: an existing Ray cluster's HOST:PORT")
    parser.add_argument("--menu-guard", action="store_true", help="agentbalance with the menu guard (docs/curves.md)")
    args = parser.parse_args()
    runs: list[dict] = []
    aggregate: dict[str, dict] = {}  # world -> method -> metric -> {mean, min, max, n} over the seeds
    for world in args.worlds.split(","):
        spec = world_spec(world)
        if spec is None:
            print(f"skipping {world}: {SHARED / world} is absent", flush=True)
            continue
        world_runs, aggregate[world] = run(world, spec, args.seeds, args, Path(args.out) / args.name)
        runs += world_runs
    report = {
        "command": "python benchmarks/curves.py " + " ".join(sys.argv[1:]),
        "runs": runs,
        "aggregate": aggregate,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
