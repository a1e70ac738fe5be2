"""Plug-in to an existing Agent Framework orchestration (paper §4.3, Table 2, in Microsoft Agent Framework): the
user's sequential orchestration as written vs the same orchestration made budget-aware, P@T, P@L and AUC, in the
simulator and, when it is there, the mmlu-pro-dev replay world.

The orchestration is the example's (examples/agent_framework_plugin.py): analyst, mathematician, reviewer, editor
in a SequentialBuilder (each reads the conversation so far: the complete DAG). "As written" runs every agent on one
backbone: the world's strongest (highest catalog Perf: the paper's base MAS, whose Tok and Lat are B_max of the
metrics), and, as the user's other choices, every Pareto-kept backbone ("as written, any one backbone": its
frontier is the best the user gets by swapping the one model). "Made budget-aware" is BudgetAwareOrchestration over
controllers trained on the same four roles for budgets of 1, 1/2, 1/4 and 1/8 of the strong orchestration's
measured Tok and Lat. Every arm runs as Agent Framework workflows over the world, on the same held-out questions,
accounted the same way. P@T_k = P(B_max x (1/8, 1/4, 1/2, 1)) of each method's convexified frontier; AUC over
[0, B_max] (agentbalance.evaluation.metrics).
Run: .venv/bin/python benchmarks/agent_framework_plugin.py  (writes benchmarks/results/agent_framework_plugin.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import runpy
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbalance.adapters.agent_framework import (
    BudgetAwareOrchestration,
    WorkflowRunner,
    read_orchestration,
)
from agentbalance.budgets import Budget
from agentbalance.encoders import TextEncoder
from agentbalance.evaluation.metrics import auc, performance_at_budgets
from agentbalance.experiment import ExperimentSpec, experiment_splits, resolve_world
from agentbalance.pooling import build_pools
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.trained import TrainedController
from benchmarks.plugin_runs import line, summary

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DATA = ROOT.parent / "shared" / "data"
EXAMPLE = runpy.run_path(str(ROOT / "examples" / "agent_framework_plugin.py"), run_name="agent_framework_example")
FRACTIONS = (1.0, 0.5, 0.25, 0.125)


@dataclass(frozen=True)
class Setting:
    world: str
    sizes: tuple[int, int, int]  # train, val, test questions
    note: str


SETTINGS = {
    "sim": Setting("sim", (400, 150, 300), "a calibrated simulator; Perf is the share of held-out questions right"),
    "mmlu-pro-dev": Setting(
        f"replay:{DATA / 'mmlu-pro-dev'}",
        (600, 200, 400),
        "real recorded answers of 25 LLMs to MMLU-Pro questions, combined by the replay world's weighted vote",
    ),
}


def metrics(points: list[dict[str, Any]], base: dict[str, Any]) -> dict[str, float]:
    """P@T1..4, AUC_tok, P@L1..4, AUC_lat (in %) of a method's measured points against the strong orchestration."""
    row: dict[str, float] = {}
    for axis, label in (("tok", "T"), ("lat", "L")):
        pairs = [(point[axis], point["perf"]) for point in points]
        for k, perf in enumerate(performance_at_budgets(pairs, base[axis]), start=1):
            row[f"P@{label}{k}"] = round(100 * perf, 2)
        row[f"AUC_{axis}"] = round(100 * auc(pairs, (base[axis], base["perf"])), 2)
    return row


def best_fitting(as_written: list[dict[str, Any]], budget_tok: float, budget_lat: float) -> dict[str, Any] | None:
    """The orchestration as written at its best whose Tok and Lat both fit a budget (the user's best one-backbone
    choice there: the paper's Table 2 comparison), None if none fits."""
    fitting = [arm for arm in as_written if arm["tok"] <= budget_tok and arm["lat"] <= budget_lat]
    best = max(fitting, key=lambda arm: arm["perf"]) if fitting else None
    return {key: best[key] for key in ("backbone", "perf", "tok", "lat")} if best else None


def measure(name: str, setting: Setting, epochs: int, seed: int, encoder: TextEncoder) -> dict[str, Any]:
    """Every arm of one world: the orchestration as written on each backbone, then made budget-aware per budget."""
    started = time.perf_counter()
    orchestration = EXAMPLE["user_orchestration"]()
    critics, domains = EXAMPLE["CRITICS"], EXAMPLE["DOMAINS"]
    experiment = ExperimentSpec(world=setting.world, sizes=setting.sizes, seed=seed)
    world, catalogs, _, task = resolve_world(experiment)
    test = experiment_splits(experiment, world, task).test  # the build's test split: never trained on
    pools = build_pools(catalogs.pooled, seed=seed)
    strong = str(pools.triples["perf"].idxmax())
    written = read_orchestration(orchestration)
    roles = written.roles(critics, domains)
    runner = WorkflowRunner(roles, world=world)

    as_written: list[dict[str, Any]] = []
    for backbone in [*pools.kept, *([strong] if strong not in pools.kept else [])]:
        mas = written.as_written(backbone)
        runs = asyncio.run(runner.run_many([(mas, query) for query in test]))
        as_written.append({"method": f"as written ({backbone} for all)", "backbone": backbone, **summary(runs)})
        print(f"[{name}] {as_written[-1]['method']}: {line(as_written[-1])}", flush=True)
    base = next(arm for arm in as_written if arm["backbone"] == strong)

    balanced: list[dict[str, Any]] = []
    for fraction in FRACTIONS:
        budget = Budget(fraction * base["tok"], fraction * base["lat"])
        spec = BuildSpec(experiment, budget=budget, train=TrainConfig(epochs=epochs), restarts=1)
        trained = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            built = build(spec, Path(folder) / "run", roles=roles)
            controller = TrainedController.load(built.out, world=world, roles=roles, encoder=encoder)
        seconds = time.perf_counter() - trained
        plugged = BudgetAwareOrchestration(orchestration, controller, world=world, critics=critics, domains=domains)
        measured = summary(asyncio.run(plugged.run_many(test)))
        balanced.append(
            {
                "budget": f"{fraction:g} x as written ({strong})",
                "budget_tok": budget.tok,
                "budget_lat": budget.lat,
                **measured,
                "meets_budget": measured["tok"] <= budget.tok and measured["lat"] <= budget.lat,
                "as_written_best_fitting": best_fitting(as_written, budget.tok, budget.lat),
                "train_seconds": round(seconds, 1),
                "runner_test": built.result.test.to_json(),  # the same questions through agentbalance's runner
            }
        )
        print(f"[{name}] made budget-aware at {balanced[-1]['budget']}: {line(balanced[-1])}", flush=True)

    methods = {
        f"as written ({strong} for all)": [base],
        "as written, any one backbone": as_written,
        "made budget-aware": balanced,
    }
    return {
        "world": f"{world.name}: {setting.note}",
        "test_queries": len(test),
        "strong_backbone": strong,
        "base": {key: base[key] for key in ("perf", "tok", "lat")},
        "metrics": {method: metrics(points, base) for method, points in methods.items()},
        "as_written": as_written,
        "made_budget_aware": balanced,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", default=",".join(SETTINGS), help=f"some of {', '.join(SETTINGS)}")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    orchestration = EXAMPLE["user_orchestration"]()
    document: dict[str, Any] = {
        "command": f"python benchmarks/agent_framework_plugin.py --worlds {args.worlds} --epochs {args.epochs} "
        f"--seed {args.seed}",
        "units": {"tok": "USD per 100 queries", "lat": "seconds per query (modelled critical path)", "P@, AUC": "%"},
        "orchestration": {
            "builder": type(orchestration).__name__,
            "agents": [agent.name for agent in read_orchestration(orchestration).agents],
            "critics": list(EXAMPLE["CRITICS"]),
            "domains": {name: list(domains) for name, domains in EXAMPLE["DOMAINS"].items()},
        },
        "budget_fractions": list(FRACTIONS),
        "worlds": {},
    }
    encoder = TextEncoder()
    out = RESULTS / "agent_framework_plugin.json"
    for name in args.worlds.split(","):
        setting = SETTINGS[name]
        if setting.world.startswith("replay:") and not Path(setting.world.removeprefix("replay:")).is_dir():
            print(f"skipped {name}: its replay world is not at {setting.world.removeprefix('replay:')}")
            continue
        document["worlds"][name] = measure(name, setting, args.epochs, args.seed, encoder)
        for method, row in document["worlds"][name]["metrics"].items():
            print(f"[{name}] {method}: " + ", ".join(f"{key} {value:.1f}" for key, value in row.items()), flush=True)
        RESULTS.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
