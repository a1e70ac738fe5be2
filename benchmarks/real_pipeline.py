"""The real pipeline end to end: two real small models on real llama.cpp servers answer 50 real GSM8K test
questions (`record`), then `build` and `curve` run offline on the recorded replay world.

Measures `record`'s throughput and per-backbone latency (one call in flight per backbone: service times), each
model's accuracy and completion length, and what `build` and `curve` make of the world. The recorded world is
kept in benchmarks/results/real-pipeline-world/ so that anyone can train on it without a server.

Needs the [local] extra and SmolLM2 (`make install-local`, docs/real-servers.md).
Run: .venv/bin/python benchmarks/real_pipeline.py   (writes benchmarks/results/real_pipeline.json)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.real_servers import RealServer, gemma3_path, local_catalog, running, smollm2_path  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
WORLD = RESULTS / "real-pipeline-world"
GSM8K = ROOT / "tests" / "data" / "gsm8k-test-50" / "test.jsonl"


def agentbalance(*args: str, env: dict[str, str]) -> str:
    """One CLI command in a subprocess (as a user types it); its stdout."""
    done = subprocess.run([sys.executable, "-m", "agentbalance.cli", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"agentbalance {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def per_backbone(outcomes: pd.DataFrame) -> dict[str, dict[str, float]]:
    stats = {}
    for model, rows in outcomes.groupby("model"):
        latency = rows["latency_s"]
        stats[str(model)] = {
            "calls": len(rows),
            "accuracy": round(float(rows["correct"].mean()), 4),
            "completion_tokens_mean": round(float(rows["completion_tokens"].mean()), 1),
            "latency_s_mean": round(float(latency.mean()), 3),
            "latency_s_p50": round(float(latency.quantile(0.5)), 3),
            "latency_s_p95": round(float(latency.quantile(0.95)), 3),
            "decode_tokens_per_s": round(float(rows["completion_tokens"].sum() / latency.sum()), 1),
        }
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=50, help="GSM8K questions (the fixture holds 50)")
    parser.add_argument("--max-tokens", type=int, default=256, help="completion limit of every call")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    command = f".venv/bin/python benchmarks/real_pipeline.py --limit {options.limit} --max-tokens {options.max_tokens}"

    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="agentbalance-real-") as scratch:
        work = Path(scratch)
        env = {**os.environ, "AGENTBALANCE_API_KEY": "not-needed", "AGENTBALANCE_CACHE_DIR": str(work / "cache")}
        smollm2 = RealServer(smollm2_path(), "smollm2")
        gemma3 = RealServer(gemma3_path(work), "gemma3", chat_format="gemma")
        with running(smollm2, work), running(gemma3, work):
            catalog = local_catalog(work, smollm2, gemma3, max_tokens=options.max_tokens)
            out = work / "world"
            started = time.perf_counter()
            said = agentbalance(
                "record", "--world", "live", "--task", "gsm8k", "--data", str(GSM8K), "--limit", str(options.limit),
                "--catalog", str(catalog), "--out", str(out), "--concurrency", "4", "--seed", str(options.seed),
                env=env,
            )  # fmt: skip
            record_wall_s = time.perf_counter() - started
        outcomes = pd.read_csv(out / "outcomes.csv.gz", keep_default_na=False)
        calls = len(outcomes)
        if WORLD.exists():
            shutil.rmtree(WORLD)
        shutil.copytree(out, WORLD)
        # base URLs were the test ports: the committed world is a replay world, which never calls anything

        started = time.perf_counter()
        built = agentbalance(
            "build", "--world", f"replay:{WORLD}", "--budget-tok", "0.002", "--epochs", "3",
            "--seed", str(options.seed), "--out", str(work / "run"), "--json", env=env,
        )  # fmt: skip
        build = json.loads(built)
        build_wall_s = time.perf_counter() - started
        started = time.perf_counter()
        agentbalance(
            "curve", "--world", f"replay:{WORLD}", "--methods", "agentbalance,single,chain,plan-menu",
            "--points", "3", "--epochs", "3", "--seed", str(options.seed), "--out", str(work / "curve"), env=env,
        )  # fmt: skip
        curve_wall_s = time.perf_counter() - started
        summary = pd.read_csv(work / "curve" / "summary.csv")

    result = {
        "command": command,
        "load_average_1min": {"before": load_before, "after": round(os.getloadavg()[0], 2)},  # > 2: contention
        "what": "record 2 real models x GSM8K test questions on real llama.cpp servers, then build and curve offline",
        "record": {
            "questions": options.limit,
            "calls": calls,
            "wall_s": round(record_wall_s, 1),
            "calls_per_s": round(calls / record_wall_s, 3),
            "said": " ".join(said.split()),
            "per_backbone": per_backbone(outcomes),
        },
        "build": {
            **{key: build[key] for key in ("perf", "tok", "lat", "feasible", "split", "n")},
            "wall_s": round(build_wall_s, 1),
        },
        "curve": {"wall_s": round(curve_wall_s, 1), "summary": summary.round(4).to_dict(orient="records")},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "real_pipeline.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["record"], indent=2))


if __name__ == "__main__":
    main()
