"""Does the controller meet a budget on the test split, and beat the best single backbone that fits it?

For each world (the simulator, and the mmlu-pro-dev and gsm8k-reasoning-dev replay worlds when present)
and four token budgets from tight to loose (latency budget loose), build a controller, then compare its
test Perf/Tok/Lat with every backbone alone, and report what it built (pools, agents, backbones, depth).
Each seed draws its own split of the world and trains its own controllers; the summary averages the seeds.
The best single that fits is the oracle's pick (best on the test split itself), the highest of a dozen
noisy estimates; so each comparison is also paired question by question, with an exact sign test on the
questions where the two disagree, and the test split is as large as the world allows (4,000 simulated).
Run: .venv/bin/python benchmarks/budget_results.py --seeds 0,1,2 --executor ray
(writes benchmarks/results/budget_results.json)
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from agentbalance.budgets import Budget
from agentbalance.executors import ExecutorSpec, add_executor_arguments, map_in_order
from agentbalance.experiment import ExperimentSpec, resolve_world
from agentbalance.mas import MAS
from agentbalance.measuring import summarise
from agentbalance.runtime.rollout import Outcome, rollout
from agentbalance.splits import world_splits
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.trained import TrainedController

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
SIZES = (600, 200, 4000)  # train / val / test questions; a replay world has fewer test questions (all are used)


def single_outcomes(world, roles, queries) -> dict[str, list[Outcome]]:
    """Every backbone of the world's catalog alone (the decision role) on `queries`, question by question."""
    outcomes = {}
    for backbone in world.catalog:
        single = MAS.single(roles.decision.name, backbone.name)
        outcomes[backbone.name] = [rollout(world, roles, single, q) for q in queries]
    return outcomes


def single_rows(roles, outcomes: dict[str, list[Outcome]]) -> list[dict[str, float]]:
    """Each single's means and the upper bounds the trainer checks budgets with."""
    rows = []
    for name, measured_outcomes in outcomes.items():
        single = MAS.single(roles.decision.name, name)
        measured = summarise([single] * len(measured_outcomes), measured_outcomes, TrainConfig().confidence_z)
        rows.append(
            {
                "backbone": name,
                "perf": measured.perf,
                "tok": measured.tok,
                "lat": measured.lat,
                "tok_upper": measured.tok_upper,
                "lat_upper": measured.lat_upper,
            }
        )
    return rows


def single_backbones(world, roles, queries) -> list[dict[str, float]]:
    """Every backbone alone on `queries`: means and upper bounds."""
    return single_rows(roles, single_outcomes(world, roles, queries))


def paired_comparison(ours: list[Outcome], theirs: list[Outcome]) -> dict[str, float | int | bool]:
    """Ours minus theirs on the same questions: the gap, its 95% interval, and an exact one-sided sign
    test on the questions only one of the two gets right (McNemar's exact test; with quality scores, a sign test
    on the questions where one scores higher): is ours worse?"""
    gains = np.array([o.score for o in ours], dtype=float) - np.array([o.score for o in theirs], dtype=float)
    spread = 1.96 * gains.std(ddof=1) / math.sqrt(len(gains)) if len(gains) > 1 else 0.0
    wins, losses = int((gains > 0).sum()), int((gains < 0).sum())
    p_worse = binomtest(losses, wins + losses, 0.5, alternative="greater").pvalue if wins + losses else 1.0
    return {
        "gap": float(gains.mean()),
        "gap_ci95": [float(gains.mean() - spread), float(gains.mean() + spread)],
        "questions_only_ours_right": wins,
        "questions_only_theirs_right": losses,
        "p_ours_worse": float(p_worse),
        "significantly_below": bool(p_worse < 0.05),
    }


def world_levels(spec_world: str) -> tuple[list[float], float]:
    """Four token budgets spread log-evenly from 1.5x the cheapest backbone alone to the costliest one,
    and a loose latency budget (3x the slowest): measured on seed 0's test split, then fixed for every seed
    so that the seeds average the same budgets."""
    world, _, roles, _ = resolve_world(ExperimentSpec(world=spec_world, sizes=SIZES))
    singles = single_backbones(world, roles, world_splits(world, SIZES, seed=0).test)
    toks = sorted(row["tok"] for row in singles)
    lat_budget = 3 * max(row["lat"] for row in singles)
    budgets = [float(x) for x in np.exp(np.linspace(math.log(toks[0] * 1.5), math.log(toks[-1]), 4))]
    return budgets, lat_budget


def run_pair(pair: tuple[str, str, int], levels: dict[str, tuple[list[float], float]], epochs: int) -> dict:
    """One (world, seed) of the sweep: the unit an executor hands out."""
    name, spec_world, seed = pair
    return run_seed(name, spec_world, seed, *levels[name], epochs)


def run_seed(name: str, spec_world: str, seed: int, budgets: list[float], lat_budget: float, epochs: int) -> dict:
    """One seed (its own split of the world and its own training): a build per budget, compared with
    every backbone alone on the same test questions."""
    experiment = ExperimentSpec(world=spec_world, sizes=SIZES, seed=seed)
    world, _, roles, _ = resolve_world(experiment)  # the world the builds see: the seed also draws its split
    splits = world_splits(world, SIZES, seed=seed)
    test_outcomes = single_outcomes(world, roles, splits.test)
    singles = single_rows(roles, test_outcomes)
    val_singles = {row["backbone"]: row for row in single_backbones(world, roles, splits.val)}
    levels = []
    for tok_budget in budgets:
        spec = BuildSpec(experiment, budget=Budget(tok_budget, lat_budget), train=TrainConfig(epochs=epochs))
        with tempfile.TemporaryDirectory() as folder:
            built = build(spec, Path(folder) / "run")
            controller = TrainedController.load(built.out)
            delta = controller.delta  # the calibrated delta of the user's budget
            systems, outcomes = controller.outcomes(world, "test")
        result = built.result
        assert [q.id for q in built.splits.test] == [q.id for q in splits.test]
        assert summarise(systems, outcomes, TrainConfig().confidence_z).perf == result.test.perf
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
                # what `build` kept: the anchored start as imitated, or a trained policy at its calibrated delta
                "kept": "anchored start" if result.anchored else "trained policy",
                "delta": delta,
                "validation": result.val.to_json(),
                "test": result.test.to_json(),
                "meets_budget_on_test": result.test.tok <= tok_budget and result.test.lat <= lat_budget,
                "best_single_that_fits": best_single,
                "perf_minus_best_single": None if best_single is None else result.test.perf - best_single["perf"],
                "validation_selected_single": val_selected,
                "perf_minus_validation_selected_single": (
                    None if val_selected is None else result.test.perf - val_selected["perf"]
                ),
                "paired_vs_best_single": (
                    None if best_single is None else paired_comparison(outcomes, test_outcomes[best_single["backbone"]])
                ),
                "paired_vs_validation_selected_single": (
                    None
                    if val_selected is None
                    else paired_comparison(outcomes, test_outcomes[val_selected["backbone"]])
                ),
            }
        )
        best = best_single and (best_single["backbone"], round(best_single["perf"], 3))
        print(
            name,
            f"seed {seed} budget {tok_budget:.4f} perf {result.test.perf:.3f} tok {result.test.tok:.4f}",
            f"best single {best}",
            "(anchored start)" if result.anchored else f"(trained, delta {delta:.3f})",
            flush=True,
        )
    return {"seed": seed, "test_n": len(splits.test), "singles": singles, "levels": levels}


def summarise_levels(seeds: list[dict]) -> list[dict[str, object]]:
    """Per budget, over the seeds: budgets met on test, and the controller's Perf minus each single
    (mean, and at how many seeds it is at or above)."""
    rows = []
    for index in range(len(seeds[0]["levels"])):
        at_level = [seed["levels"][index] for seed in seeds]
        row: dict[str, object] = {
            "budget_tok": at_level[0]["budget_tok"],
            "seeds": len(at_level),
            "budget_met_on_test": sum(level["meets_budget_on_test"] for level in at_level),
            "controller_perf_mean": float(np.mean([level["test"]["perf"] for level in at_level])),
        }
        for reference in ("best_single", "validation_selected_single"):
            gaps = [
                level[f"perf_minus_{reference}"] for level in at_level if level[f"perf_minus_{reference}"] is not None
            ]
            row[f"minus_{reference}_mean"] = float(np.mean(gaps)) if gaps else None
            row[f"at_or_above_{reference}"] = sum(gap >= -1e-9 for gap in gaps)
            paired = [level[f"paired_vs_{reference}"] for level in at_level if level[f"paired_vs_{reference}"]]
            row[f"significantly_below_{reference}"] = sum(test["significantly_below"] for test in paired)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=25)
    parser.add_argument("--seeds", default="0", help="comma-separated; each seed has its own split and training")
    add_executor_arguments(parser)  # --executor ray: each (world, seed) a Ray task, here or on a cluster
    parser.add_argument("--worlds", default="simulated,mmlu-pro-dev,gsm8k-reasoning-dev")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    worlds = []
    for name in args.worlds.split(","):
        if name == "simulated":
            worlds.append((name, "sim"))
        elif (SHARED / name).is_dir():
            worlds.append((name, f"replay:{SHARED / name}"))
        else:
            print(f"skipping {name}: {SHARED / name} is absent", flush=True)
    levels = {name: world_levels(spec) for name, spec in worlds}
    pairs = [(name, spec, seed) for name, spec in worlds for seed in seeds]
    unit = functools.partial(run_pair, levels=levels, epochs=args.epochs)
    done = dict(zip(pairs, map_in_order(ExecutorSpec(args.executor, args.address), unit, pairs), strict=True))
    report = {
        "command": "python benchmarks/budget_results.py " + " ".join(sys.argv[1:]),
        "worlds": [
            {
                "world": name,
                "summary": summarise_levels([done[(name, spec, seed)] for seed in seeds]),
                "seeds": [done[(name, spec, seed)] for seed in seeds],
            }
            for name, spec in worlds
        ],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "budget_results.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
