"""Is `--executor ray` worth it on this machine? One sweep run twice in one run of this script, with the local
executor and with a local Ray (its start-up included), timed end to end as a user types the command, and the
two summary.csv compared byte for byte (same seed, same numbers).

A warm-up first fills the embedding cache for both seeds' questions (in a cache folder of this run's own), so
neither timed run pays for embeddings the other got for free. Target (issue #22): Ray at most 0.8 x local.
Run: .venv/bin/python benchmarks/ray_speedup.py   (writes benchmarks/results/ray_speedup.json)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentbalance.evaluation.curve_files import read_timings

RESULTS = Path(__file__).resolve().parent / "results"
SWEEP = ["--world", "sim", "--methods", "agentbalance,single,chain", "--points", "4", "--epochs", "3"]
TARGET = 0.8


def curve(args: list[str], out: Path, env: dict[str, str]) -> float:
    """Wall seconds of one `agentbalance curve` command in a fresh process."""
    command = [sys.executable, "-m", "agentbalance.cli", "curve", *args, "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="0,1")
    args = parser.parse_args()
    sweep = [*SWEEP, "--seeds", args.seeds]
    with tempfile.TemporaryDirectory(prefix="ray-speedup-") as scratch:
        work = Path(scratch)
        env = {**os.environ, "AGENTBALANCE_CACHE_DIR": str(work / "cache")}
        env.pop("AGENTBALANCE_EMBEDDING_CACHE_DIR", None)
        warm_up = ["--world", "sim", "--methods", "single", "--points", "1", "--seeds", args.seeds]
        warm = curve(warm_up, work / "warm", env)
        print(f"warm-up (embeddings of both seeds' questions): {warm:.0f} s", flush=True)
        local = curve([*sweep, "--executor", "local"], work / "local", env)
        print(f"local executor: {local:.0f} s", flush=True)
        ray = curve([*sweep, "--executor", "ray"], work / "ray", env)
        print(f"ray executor: {ray:.0f} s ({ray / local:.2f} x local)", flush=True)
        identical = (work / "local" / "summary.csv").read_text() == (work / "ray" / "summary.csv").read_text()
        units = {
            name: [
                {"seed": t.seed, "method": t.method, "seconds": round(t.seconds, 1)}
                for t in read_timings(work / name / "timings.csv")
            ]
            for name in ("local", "ray")
        }
    report = {
        "command": "python benchmarks/ray_speedup.py " + " ".join(sys.argv[1:]),
        "sweep": "agentbalance curve " + " ".join(sweep) + " --executor local|ray",
        "machine": {"cpus": os.cpu_count()},
        "seconds": {"warm_up": round(warm, 1), "local": round(local, 1), "ray": round(ray, 1)},
        "ray_over_local": round(ray / local, 3),
        "target": f"ray <= {TARGET} x local, identical summary.csv",
        "met": bool(ray <= TARGET * local and identical),
        "identical_summary_csv": identical,
        "unit_seconds": units,  # where each unit ran: a Ray unit also opens its own experiment
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ray_speedup.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("seconds", "ray_over_local", "identical_summary_csv", "met")}))


if __name__ == "__main__":
    main()
