"""What the anchored start's plans score on the test split, nothing trained: a fast proxy of `agentbalance`'s Tok
curve, and what-ifs of how the plans are chosen.

In every run examined the final controller is the anchored start: no epoch of REINFORCE beat it on validation by
the margin (docs/results.md). So agentbalance's `gain_log_tok` is, as far as imitation builds the plans faithfully,
the plans' own. This script makes the plan menu as `build` does (the same experiment and splits as `curve`, the
budget grid of `curve`'s agentbalance Tok controller, the pretrained difficulty head), takes each grid budget's plan
(`PlanMenu.best`) and scores it on the test split, a mixture by the head's split of the test questions; the gain is
`gain_log_tok`'s rule over those points. Seconds to a few minutes per world and seed, where the benchmark takes
minutes to an hour; next to it, each seed's `agentbalance` gain in `benchmarks/results/adaptive-W.json`.

Two what-ifs, choices a user could make, scored the same way:
* `singles`: the menu without multi-agent templates (single backbones and their mixtures by difficulty);
* `margin_K`: a plan with more than one agent is kept only where its measured Perf beats the best single-backbone
  plan that fits by K of its standard errors, else that plan (a guard against the winner's curse: the menu holds
  hundreds of multi-agent templates against a few dozen single-backbone ones).
Run: .venv/bin/python benchmarks/studies/anchored_plans.py [--worlds sim,mmlu-pro-dev,...] [--seeds 0,1,2]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from dev_worlds import BENCHMARK_RESULTS, REPLAY_WORLDS, RESULTS, sweep, sweep_arguments

from agentbalance.budgets import Budget
from agentbalance.evaluation.baselines.fixed import base_mas
from agentbalance.evaluation.metrics import gain_over_single
from agentbalance.evaluation.ours import AgentBalanceMethod
from agentbalance.experiment import Experiment
from agentbalance.measuring import Evaluation, measure
from agentbalance.policy.controller import ControllerConfig
from agentbalance.templates import single_mas
from agentbalance.train.anchor import AnchorPlan, PlanMenu, plan_menu
from agentbalance.train.build import BuildSpec, describe_plan, restart_controller
from agentbalance.train.config import TrainConfig

WORLDS = ("sim", *REPLAY_WORLDS)
MARGINS = (1.0, 2.0)
Rule = Callable[[PlanMenu, Budget], AnchorPlan]


def multi_agent(plan: AnchorPlan) -> bool:
    return len(plan.easy.agents) > 1 or len(plan.hard.agents) > 1


def singles_only(menu: PlanMenu) -> PlanMenu:
    """The menu without any plan that uses a multi-agent template."""
    return PlanMenu(
        [p for p in menu.alone if not multi_agent(p)], [p for p in menu.mixed if not multi_agent(p)], menu.penalties
    )


def with_margin(margin: float) -> Rule:
    """A multi-agent plan only where it beats the best single-backbone plan that fits by `margin` standard errors."""

    def rule(menu: PlanMenu, budget: Budget) -> AnchorPlan:
        chosen, single = menu.best(budget), singles_only(menu).best(budget)
        if not multi_agent(chosen) or not single.measured.meets(budget):
            return chosen
        ahead = chosen.measured.perf - margin * chosen.measured.perf_standard_error() > single.measured.perf
        return chosen if ahead else single

    return rule


def rules() -> dict[str, Rule]:
    return {
        "as_chosen": lambda menu, budget: menu.best(budget),
        "singles": lambda menu, budget: singles_only(menu).best(budget),
        **{f"margin_{margin:g}": with_margin(margin) for margin in MARGINS},
    }


def plans_on_test(experiment: Experiment) -> dict[str, Any]:
    """One world and seed: per rule, each grid budget's plan, its measured and its test numbers, and the gain."""
    method = AgentBalanceMethod()
    method.settings(experiment, 8)  # the sweep's eight Tok settings: the controller's grid
    budget_range = method.budget_range(experiment, "tok")
    spec = BuildSpec(
        budget=budget_range.loosest, budget_range=budget_range, train=TrainConfig(), controller=ControllerConfig()
    )
    _, trainer = restart_controller(experiment, spec, 0)
    splits = experiment.splits
    trainer.pretrain_difficulty(splits.train)
    run = trainer.run
    menu = plan_menu(run, splits.train, splits.val)
    with torch.no_grad():
        difficulty = run.controller.difficulty(run.embed(splits.test)).tolist()
    scored: dict[int, Evaluation] = {}

    def on_test(plan: AnchorPlan) -> Evaluation:
        if id(plan) not in scored:
            mases = [plan.hard if d > plan.threshold else plan.easy for d in difficulty]
            scored[id(plan)] = measure(experiment, mases, splits.test)
        return scored[id(plan)]

    singles = [measure(experiment, [single_mas(experiment.roles, b.name)] * len(splits.test), splits.test)
               for b in experiment.catalogs.described]  # fmt: skip
    single_points = [(e.tok, e.perf) for e in singles]
    base = measure(experiment, [base_mas(experiment)] * len(splits.test), splits.test)
    grid = [budget_range.at(scale) for scale in budget_range.scales()]
    out: dict[str, Any] = {"grid_tok": [round(float(b.tok or 0.0), 6) for b in grid]}
    for name, rule in rules().items():
        plans = [rule(menu, budget) for budget in grid]
        tested = [on_test(plan) for plan in plans]
        out[name] = {
            "gain_log_tok": round(gain_over_single([(e.tok, e.perf) for e in tested], single_points, base.tok), 3),
            "plans": [
                {
                    "plan": describe_plan(plan),
                    "measured_perf": round(plan.measured.perf, 4),
                    "test_perf": round(e.perf, 4),
                    "test_tok": round(e.tok, 6),
                }
                for plan, e in zip(plans, tested, strict=True)
            ],
        }
    return out


def benchmark_gains(world: str) -> list[float] | None:
    """Each seed's `agentbalance` gain_log_tok in the committed adaptive-W.json, if there is one."""
    path = BENCHMARK_RESULTS / f"adaptive-{world}.json"
    if not path.is_file():
        return None
    runs = json.loads(path.read_text())["runs"]
    return [float(run["summary"]["agentbalance"]["gain_log_tok"]) for run in runs]


def main() -> None:
    args = sweep_arguments(__doc__, WORLDS, "0,1,2")
    worlds: dict[str, dict[str, Any]] = {}
    for world, experiments in sweep(args):
        runs = {str(seed): plans_on_test(experiment) for seed, experiment in experiments}
        means = {name: mean_gain(runs.values(), name) for name in rules()}
        worlds[world] = {"gain_log_tok_mean": means, "benchmark_agentbalance_by_seed": benchmark_gains(world)}
        worlds[world]["seeds"] = runs
        print(f"{world}: " + ", ".join(f"{name} {gain:+.2f}" for name, gain in means.items()), flush=True)
    command = f"python benchmarks/studies/anchored_plans.py --worlds {args.worlds} --seeds {args.seeds}"
    overall = {name: round(float(np.mean([w["gain_log_tok_mean"][name] for w in worlds.values()])), 3)
               for name in rules()}  # fmt: skip
    report = {"command": command, "mean_over_worlds": overall, "worlds": worlds}
    (RESULTS / "anchored_plans.json").write_text(json.dumps(report, indent=2) + "\n")


def mean_gain(runs: Iterable[dict[str, Any]], rule: str) -> float:
    return round(float(np.mean([run[rule]["gain_log_tok"] for run in runs])), 3)


if __name__ == "__main__":
    main()
