"""Does the controller meet a budget on the test split, and beat the best single backbone that fits it?

For each world (the simulator, and the mmlu-pro-dev and gsm8k-reasoning-dev replay worlds when present)
and four token budgets from tight to loose (latency budget loose), build a controller, then compare its
test Perf/Tok/Lat with every backbone alone, and report what it built (pools, agents, backbones, depth).
Run: .venv/bin/python benchmarks/budget_results.py  (writes benchmarks/results/budget_results.json)
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import numpy as np

from agentbalance.mas import MAS
from agentbalance.runtime.rollout import rollout
from agentbalance.train.budgets import Budget
from agentbalance.train.build import BuildSpec, build, resolve_world
from agentbalance.train.data import world_splits
from agentbalance.train.reinforce import TrainConfig, evaluation_json, summarise

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def single_backbones(world, roles, queries) -> list[dict[str, float]]:
    """Every backbone of the world's catalog alone (the decision role) on `queries`: means and the upper
    bounds the trainer checks budgets with."""
    rows = []
    for backbone in world.catalog:
        single = MAS.single(roles.decision.name, backbone.name)
        outcomes = [rollout(world, roles, single, q) for q in queries]
        measured = summarise([single] * len(queries), outcomes, TrainConfig().confidence_z)
        rows.append(
            {
                "backbone": backbone.name,
                "perf": measured.perf,
                "tok": measured.tok,
                "lat": measured.lat,
                "tok_upper": measured.tok_upper,
                "lat_upper": measured.lat_upper,
            }
        )
    return rows


def run_world(name: str, spec_world: str, epochs: int) -> dict[str, object]:
    probe = BuildSpec(world=spec_world, sizes=(600, 200, 400))
    world, _, roles, _ = resolve_world(probe)
    splits = world_splits(world, probe.sizes, seed=0)
    singles = single_backbones(world, roles, splits.test)
    val_singles = {row["backbone"]: row for row in single_backbones(world, roles, splits.val)}
    toks = sorted(row["tok"] for row in singles)
    lat_budget = 3 * max(row["lat"] for row in singles)
    budgets = [float(x) for x in np.exp(np.linspace(math.log(toks[0] * 1.5), math.log(toks[-1]), 4))]
    levels = []
    for tok_budget in budgets:
        spec = BuildSpec(
            world=spec_world, budget=Budget(tok_budget, lat_budget), sizes=probe.sizes, train=TrainConfig(epochs=epochs)
        )
        with tempfile.TemporaryDirectory() as folder:
            result = build(spec, Path(folder) / "run").result
        fitting = [row for row in singles if row["tok"] <= tok_budget and row["lat"] <= lat_budget]
        best_single = max(fitting, key=lambda row: row["perf"]) if fitting else None
        # what a user could pick without the test split: the best single whose validation upper bounds fit
        val_fitting = [
            row
            for row in singles
            if val_singles[row["backbone"]]["tok_upper"] <= tok_budget
            and val_singles[row["backbone"]]["lat_upper"] <= lat_budget
        ]
        val_selected = max(val_fitting, key=lambda row: val_singles[row["backbone"]]["perf"]) if val_fitting else None
        levels.append(
            {
                "budget_tok": tok_budget,
                "budget_lat": lat_budget,
                "feasible_on_val": result.feasible,
                "test": evaluation_json(result.test),
                "meets_budget_on_test": result.test.tok <= tok_budget and result.test.lat <= lat_budget,
                "best_single_that_fits": best_single,
                "perf_minus_best_single": None if best_single is None else result.test.perf - best_single["perf"],
                "validation_selected_single": val_selected,
                "perf_minus_validation_selected_single": (
                    None if val_selected is None else result.test.perf - val_selected["perf"]
                ),
            }
        )
        print(
            name,
            f"budget {tok_budget:.4f}",
            "perf",
            round(result.test.perf, 3),
            "tok",
            round(result.test.tok, 4),
            "best single",
            best_single and (best_single["backbone"], round(best_single["perf"], 3)),
        )
    return {"world": name, "test_n": len(splits.test), "singles": singles, "levels": levels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=25)
    args = parser.parse_args()
    worlds = [("simulated", "sim")]
    for folder in ("mmlu-pro-dev", "gsm8k-reasoning-dev"):
        if (SHARED / folder).is_dir():
            worlds.append((folder, f"replay:{SHARED / folder}"))
    report = {
        "command": f"python benchmarks/budget_results.py --epochs {args.epochs}",
        "worlds": [run_world(name, spec, args.epochs) for name, spec in worlds],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "budget_results.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
