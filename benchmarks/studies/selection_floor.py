"""How far below the test split's single-LLM frontier an honest choice of one backbone lands.

`gain_log_tok` compares a method with the single-LLM frontier: every backbone of the catalog alone, measured
on the test split, convexified. Which backbone is best at a budget is thus read off the test answers
themselves. A method must choose before it sees them, so even a perfect chooser of one backbone per budget
(in expectation) scores below that frontier where two backbones are close and a few hundred test questions
decide between them. This script measures that floor: per world and seed (the splits of `curve`), at each
of the eight gain budgets, the backbone with the best Perf on the training and validation questions among
those whose upper cost bound there fits the budget (the anchored start's rule for a template alone), scored
on test; its points' frontier against the test frontier, by the same rule as `gain_log_tok`. Nothing is
trained. Worlds absent from the data folder are skipped.
Run: .venv/bin/python benchmarks/studies/selection_floor.py   (writes benchmarks/studies/results/selection_floor.json)
"""

from __future__ import annotations

import json

import numpy as np
from dev_worlds import REPLAY_WORLDS, RESULTS, sweep, sweep_arguments

from agentbalance.budgets import Budget
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.metrics import frontier, gain_budgets
from agentbalance.experiment import Experiment
from agentbalance.measuring import Evaluation, measure
from agentbalance.templates import single_mas


def floor_of(experiment: Experiment) -> dict[str, object]:
    """One world and seed: the budgets, the backbone chosen at each, and the per-budget and mean gap (points)."""
    splits = experiment.splits
    known = [*splits.train, *splits.val]
    chosen_on: dict[str, Evaluation] = {}
    on_test: dict[str, Evaluation] = {}
    for backbone in (b.name for b in experiment.catalogs.described):
        mas = single_mas(experiment.roles, backbone)
        chosen_on[backbone] = measure(experiment, [mas] * len(known), known)
        on_test[backbone] = measure(experiment, [mas] * len(splits.test), splits.test)
    base = measure(experiment, [base_mas(experiment)] * len(splits.test), splits.test)
    budgets = gain_budgets([e.tok for e in on_test.values()], base.tok)
    cheapest = min(chosen_on, key=lambda name: chosen_on[name].tok_upper)  # where nothing fits
    picks = []
    for budget in budgets:
        fitting = [name for name, e in chosen_on.items() if e.meets(Budget(tok=budget))]
        best = max(fitting, key=lambda name: (chosen_on[name].perf, -chosen_on[name].tok), default=cheapest)
        picks.append(best)
    honest = frontier([(on_test[name].tok, on_test[name].perf) for name in picks])
    oracle = frontier([(e.tok, e.perf) for e in on_test.values()])
    gaps = [100 * (honest.at(budget) - oracle.at(budget)) for budget in budgets]
    return {
        "budgets": [round(b, 6) for b in budgets],
        "chosen": picks,
        "gap_per_budget": [round(g, 2) for g in gaps],
        "gain_log_tok": round(float(np.mean(gaps)), 3),
        "test_questions": len(splits.test),
    }


def main() -> None:
    args = sweep_arguments(__doc__, REPLAY_WORLDS, "0,1,2")
    worlds: dict[str, object] = {}
    for world, experiments in sweep(args):
        runs = {str(seed): floor_of(experiment) for seed, experiment in experiments}
        gains = [float(run["gain_log_tok"]) for run in runs.values()]
        per_budget = np.mean([run["gap_per_budget"] for run in runs.values()], axis=0)
        worlds[world] = {
            "seeds": runs,
            "gain_log_tok_mean": round(float(np.mean(gains)), 2),
            "gap_per_budget_seed_mean": [round(float(g), 2) for g in per_budget],
            "worst_budget_seed_mean": round(float(per_budget.min()), 2),
        }
        print(f"{world}: gain_log_tok {np.mean(gains):+.2f} (seeds {gains}); worst budget {per_budget.min():+.1f}")
    command = f"python benchmarks/studies/selection_floor.py --worlds {args.worlds} --seeds {args.seeds}"
    (RESULTS / "selection_floor.json").write_text(json.dumps({"command": command, "worlds": worlds}, indent=2) + "\n")


if __name__ == "__main__":
    main()
