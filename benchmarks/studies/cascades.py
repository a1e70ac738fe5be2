"""Hand-built agreement cascades against the best single backbone, on every question of the dev replay worlds.

Reproduces, with the project's own execution (`templates.cascade_mas`, `runtime.rollout.execute`), the
cascade table of issue #18: per world, the best backbone alone and a named cascade (two answerers, or two
samples of one backbone, and the decision role on a stronger backbone, asked only when they disagree), with
Perf, Tok (USD per 100 queries) and the escalation rate, on all recorded questions (no split: nothing is
trained here). Worlds absent from the data folder are skipped.
Run: .venv/bin/python benchmarks/studies/cascades.py   (writes benchmarks/studies/results/cascades.json)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agentbalance.executors import ExecutorSpec, add_executor_arguments, map_in_order
from agentbalance.experiment import ExperimentSpec, resolve_world
from agentbalance.mas import MAS
from agentbalance.measuring import CONFIDENCE_Z, Evaluation, summarise
from agentbalance.runtime.rollout import execute
from agentbalance.templates import cascade_mas, single_mas

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"

# world -> the cascade of the table: (first answerer, second answerer), escalation backbone
CASCADES: dict[str, tuple[tuple[str, str], str]] = {
    "mmlu-pro-dev": (("Meta-Llama-3-70B", "gemini-1.5-flash-002"), "DeepSeek-Coder-V2"),
    "gsm8k-reasoning-dev": (("Phi-3-medium-4k-instruct", "gemini-1.5-flash"), "QwQ-32B"),
    "date-mot-dev": (("gpt-3.5-turbo-pot", "gpt-3.5-turbo-pot"), "gpt-4-cot"),
    "routerbench-arc-challenge": (("mistralai/mixtral-8x7b-chat", "zero-one-ai/Yi-34B-Chat"), "gpt-4-1106-preview"),
}


def point(evaluation: Evaluation) -> dict[str, float]:
    return {
        "perf": round(100 * evaluation.perf, 2),
        "tok": round(evaluation.tok, 5),
        "escalation_rate": round(evaluation.escalation_rate, 3),
        "n": evaluation.n,
    }


def measured(world, roles, mas: MAS, queries) -> Evaluation:  # type: ignore[no-untyped-def]
    outcomes = execute(world, roles, [(mas, query) for query in queries])
    return summarise([mas] * len(queries), outcomes, CONFIDENCE_Z)


def world_row(name: str, folder: Path) -> dict[str, object]:
    world, _, roles, _ = resolve_world(ExperimentSpec(world=f"replay:{folder}"))
    queries = [q for split in ("train", "val", "test") for q in world.queries(split)]  # type: ignore[attr-defined]
    singles = {b: measured(world, roles, single_mas(roles, b), queries) for b in world.catalog.names}
    best = max(singles, key=lambda b: (singles[b].perf, -singles[b].tok))
    answerers, escalation = CASCADES[name]
    cascade = measured(world, roles, cascade_mas(roles, answerers, escalation), queries)
    print(
        f"{name}: best single {best} {100 * singles[best].perf:.1f}% at {singles[best].tok:.4f}; "
        f"{'+'.join(answerers)} -> {escalation}: {100 * cascade.perf:.1f}% at {cascade.tok:.4f}, "
        f"escalates {100 * cascade.escalation_rate:.0f}%",
        flush=True,
    )
    return {
        "world": name,
        "questions": len(queries),
        "best_single": {"backbone": best, **point(singles[best])},
        "cascade": {"answerers": list(answerers), "escalation": escalation, **point(cascade)},
        "singles": {b: point(e) for b, e in singles.items()},
    }


def world_of(name: str) -> dict[str, object]:
    return world_row(name, SHARED / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--worlds", default=",".join(CASCADES))
    add_executor_arguments(parser)  # --executor ray: each world a Ray task
    args = parser.parse_args()
    names = []
    for name in args.worlds.split(","):
        if not (SHARED / name).is_dir():
            print(f"skipping {name}: {SHARED / name} is absent", flush=True)
            continue
        names.append(name)
    rows = map_in_order(ExecutorSpec(args.executor, args.address), world_of, names)
    report = {"command": "python benchmarks/studies/cascades.py " + " ".join(sys.argv[1:]), "worlds": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cascades.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
