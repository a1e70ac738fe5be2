"""How close does one budget-conditioned controller come to a controller trained per budget?

For each world of benchmarks/results/budget_results.json (seed 0: its four token budgets, geometric from tight
to loose, and its loose latency budget), train ONE controller with `--budget-conditioned` over exactly
those four budgets (a Tok-only range; the latency budget is checked on test afterwards), then compare
its test Perf/Tok/Lat at each budget with the per-budget controller of budget_results.json.
Run: .venv/bin/python benchmarks/budget_conditioned.py  (writes benchmarks/results/budget_conditioned.json)
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
import time
from pathlib import Path

from agentbalance.budgets import Budget, BudgetRange
from agentbalance.executors import ExecutorSpec, add_executor_arguments, map_in_order
from agentbalance.experiment import ExperimentSpec
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SPECS = {"simulated": "sim"} | {name: f"replay:{SHARED / name}" for name in ("mmlu-pro-dev", "gsm8k-reasoning-dev")}


def run_world(per_budget: dict[str, object], epochs: int) -> dict[str, object]:
    """Seed 0: the budget-conditioned controller against seed 0's per-budget controllers."""
    seeds = per_budget["seeds"]
    assert isinstance(seeds, list)
    seed0 = next(entry for entry in seeds if entry["seed"] == 0)
    levels = seed0["levels"]
    budgets = [level["budget_tok"] for level in levels]
    lat_budget = levels[0]["budget_lat"]
    loosest = Budget(tok=budgets[-1])
    spec = BuildSpec(
        # the same test questions as the per-budget controllers
        ExperimentSpec(world=SPECS[str(per_budget["world"])], sizes=(600, 200, int(seed0["test_n"]))),
        budget=loosest,
        budget_range=BudgetRange(loosest, ratio=budgets[-1] / budgets[0], steps=len(budgets)),
        train=TrainConfig(epochs=epochs),
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        result = build(spec, Path(folder) / "run").result
    rows = []
    for level, point in zip(levels, result.points, strict=True):
        test = point["test"]
        assert isinstance(test, dict)
        rows.append(
            {
                "budget_tok": level["budget_tok"],
                "served_budget_tok": point["budget"]["tok"],  # type: ignore[index]
                "budget_lat": lat_budget,
                "conditioned": {k: test[k] for k in ("perf", "tok", "lat")},
                "conditioned_meets_budget_on_test": test["tok"] <= level["budget_tok"] * (1 + 1e-9)
                and test["lat"] <= lat_budget,
                "per_budget": {k: level["test"][k] for k in ("perf", "tok", "lat")},
                "perf_conditioned_minus_per_budget": test["perf"] - level["test"]["perf"],
                "best_single_that_fits": level["best_single_that_fits"],
            }
        )
        print(per_budget["world"], f"budget {level['budget_tok']:.4f}", rows[-1]["conditioned"], rows[-1]["per_budget"])
    return {"world": per_budget["world"], "seconds": round(time.perf_counter() - started, 1), "levels": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=25)
    parser.add_argument("--worlds", default="simulated,mmlu-pro-dev")
    add_executor_arguments(parser)  # --executor ray: each world a Ray task
    args = parser.parse_args()
    per_budget = json.loads((RESULTS / "budget_results.json").read_text(encoding="utf-8"))["worlds"]
    chosen = [w for w in per_budget if w["world"] in args.worlds.split(",")]
    chosen = [w for w in chosen if w["world"] == "simulated" or (SHARED / str(w["world"])).is_dir()]
    report = {
        "command": f"python benchmarks/budget_conditioned.py --epochs {args.epochs} --worlds {args.worlds}",
        "worlds": map_in_order(
            ExecutorSpec(args.executor, args.address), functools.partial(run_world, epochs=args.epochs), chosen
        ),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "budget_conditioned.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
