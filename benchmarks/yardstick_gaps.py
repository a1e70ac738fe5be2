"""Budget by budget: how far agentbalance's curve lies above or below the yardsticks a user would pick on
validation (`plan-menu`, `single-val`), read from the sweeps `curves.py` wrote.

`gain_log_tok` averages over eight log-spaced budgets; an average can hide one budget where the controller
loses. Here each of those eight budgets (metrics.py, rule 5: from the cheapest backbone alone to the base
MAS) gets its own difference P_agentbalance(B) - P_yardstick(B) of the convexified test frontiers, in points,
per world and seed, then the mean, min and max over the seeds, and the worst budget of the seed mean; their
mean over the budgets is agentbalance's `gain_log_tok` measured against the yardstick's (`gain_over`). No
training: it reads the curve.csv files. Run after curves.py, on its output folder:
  .venv/bin/python benchmarks/yardstick_gaps.py --sweeps runs/benchmark-curves/yardsticks-guard --name yardstick-gaps
(a sweep still running has worlds with some methods' points missing: name the finished ones with --worlds)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from agentbalance.evaluation.curve_files import CurveRow, read_curve
from agentbalance.evaluation.metrics import frontier, gain_budgets

RESULTS = Path(__file__).resolve().parent / "results"
OURS = "agentbalance"


def gaps(rows: list[CurveRow], yardstick: str, axis: str = "tok") -> list[float] | None:
    """P_agentbalance(B) - P_yardstick(B) in points at each gain budget on `axis`; None if a method is absent."""
    base = next(row for row in rows if row.method == "base")

    def pairs(method: str) -> list[tuple[float, float]]:
        return [(getattr(r, axis), r.perf) for r in rows if r.method == method and r.counts_on(axis)]

    ours, theirs, single = pairs(OURS), pairs(yardstick), pairs("single")
    if not ours or not theirs:
        return None
    budgets = gain_budgets((budget for budget, _ in single), getattr(base, axis))
    mine, other = frontier(ours), frontier(theirs)
    return [100 * (mine.at(budget) - other.at(budget)) for budget in budgets]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sweeps", required=True, help="a curves.py output folder: WORLD/seed-N/curve.csv")
    parser.add_argument("--worlds", default=None, help="comma-separated world folders (default: every one)")
    parser.add_argument("--yardsticks", default="plan-menu,single-val")
    parser.add_argument("--name", default="yardstick-gaps")
    args = parser.parse_args()
    report: dict[str, object] = {"command": "python benchmarks/yardstick_gaps.py " + " ".join(sys.argv[1:])}
    worlds: dict[str, dict[str, object]] = {}
    wanted = set(args.worlds.split(",")) if args.worlds else None
    for world in sorted(p for p in Path(args.sweeps).iterdir() if p.is_dir() and (wanted is None or p.name in wanted)):
        seeds = sorted(world.glob("seed-*/curve.csv"))
        if not seeds:
            continue
        entry: dict[str, object] = {}
        for yardstick in args.yardsticks.split(","):
            per_seed = {path.parent.name: gaps(read_curve(path), yardstick) for path in seeds}
            present = {seed: g for seed, g in per_seed.items() if g is not None}
            if not present:
                continue
            table = np.array(list(present.values()))
            mean = table.mean(axis=0)
            entry[yardstick] = {
                "per_seed": {seed: [round(x, 2) for x in g] for seed, g in present.items()},
                "mean": [round(float(x), 2) for x in mean],
                "min": [round(float(x), 2) for x in table.min(axis=0)],
                "max": [round(float(x), 2) for x in table.max(axis=0)],
                # the mean over the budgets: agentbalance's gain_log_tok over this yardstick's, in points
                "gain_over": {
                    "mean": round(float(table.mean()), 2),
                    "min": round(float(table.mean(axis=1).min()), 2),
                    "max": round(float(table.mean(axis=1).max()), 2),
                },
                "worst_budget_of_the_mean": round(float(mean.min()), 2),
                "worst_budget_of_any_seed": round(float(table.min()), 2),
            }
            print(f"{world.name} vs {yardstick}: mean by budget {entry[yardstick]['mean']}", flush=True)
        worlds[world.name] = entry
    report["worlds"] = worlds
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
