"""Plug-in to an existing AutoGen team (paper §4.3, Table 2): the user's team as written vs the same team with
agentbalance, at matched budgets, on the simulated world.

The team is the example's (examples/autogen_plugin.py): researcher, skeptic, calculator, final answerer.
"As written" is the complete DAG (every agent reads every earlier one) with one backbone for all: the user's
strong choice (qwen3-235b-a22b), and, for the budgets it does not fit, every other Pareto-kept backbone, so the
team as written gets its best one-backbone Perf at each budget (its P@B). "+ agentbalance" is a controller
trained on the same four roles for budgets matched to what the team as written measurably spends (Tok and
Lat), and tighter fractions of it. Both run through AutoGen GraphFlows with world-backed clients on the same
held-out questions, accounted the same way.
Run: .venv/bin/python benchmarks/autogen_plugin.py  (writes benchmarks/results/autogen_plugin.json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import runpy
import tempfile
import time
from pathlib import Path
from typing import Any

from agentbalance.adapters.autogen import AgentBalanceTeam, GraphFlowRunner, roles_from_agents
from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.experiment import ExperimentSpec
from agentbalance.query import Query
from agentbalance.splits import world_splits
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.trained import TrainedController
from agentbalance.worlds.simulated import SimulatedWorld
from benchmarks.plugin_runs import line, summary

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
EXAMPLE = runpy.run_path(str(ROOT / "examples" / "autogen_plugin.py"), run_name="autogen_plugin_example")
STRONG, STRONGEST = "qwen3-235b-a22b", "qwen3-235b-a22b-think"  # the user's choice; its thinking variant
AS_WRITTEN_BACKBONES = ("qwen3-1.7b", "qwen3-8b", "qwen3-30b-a3b", STRONG, "qwen3-30b-a3b-think", STRONGEST)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300, help="held-out test questions per arm")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--fractions", default="1,0.5,0.25", help="budgets as fractions of the team as written")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fractions = [float(x) for x in args.fractions.split(",")]
    started = time.perf_counter()

    agents = EXAMPLE["user_agents"](EXAMPLE["users_model_client"]())
    decision, critics, domains = EXAMPLE["DECISION"], EXAMPLE["CRITICS"], EXAMPLE["DOMAINS"]
    roles = roles_from_agents(agents, decision, critics, domains)
    world = SimulatedWorld(Catalog.load(), seed=args.seed)
    sizes = (400, 150, args.queries)
    test: list[Query] = world_splits(world, sizes, seed=args.seed).test
    flows = GraphFlowRunner(roles, world=world)
    encoder = TextEncoder()

    arms: list[dict[str, Any]] = []
    for backbone in AS_WRITTEN_BACKBONES:
        written = EXAMPLE["as_written"](roles.names, backbone)
        runs = asyncio.run(flows.run_many([(written, q) for q in test]))
        arms.append({"method": f"as written ({backbone} for all, complete DAG)", "backbone": backbone, **summary(runs)})
        print(f"{arms[-1]['method']}: {line(arms[-1])}", flush=True)
    by_backbone = {arm["backbone"]: arm for arm in arms}

    levels = [(fraction, by_backbone[STRONG]) for fraction in fractions] + [(1.0, by_backbone[STRONGEST])]
    rows: list[dict[str, Any]] = []
    for fraction, reference in levels:
        budget = Budget(fraction * reference["tok"], fraction * reference["lat"])
        experiment = ExperimentSpec(world="sim", sizes=sizes, seed=args.seed)
        spec = BuildSpec(experiment, budget=budget, train=TrainConfig(epochs=args.epochs), restarts=1)
        trained = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            built = build(spec, Path(folder) / "run", roles=roles)
            controller = TrainedController.load(built.out, world=world, roles=roles, encoder=encoder)
        seconds = time.perf_counter() - trained
        # the controller serves the budget it was built for
        team = AgentBalanceTeam(agents, decision, controller, world=world, critics=critics, domains=domains)
        balanced = summary(asyncio.run(team.run_many(test)))
        fitting = [arm for arm in arms if arm["tok"] <= budget.tok and arm["lat"] <= budget.lat]
        best_written = max(fitting, key=lambda arm: arm["perf"]) if fitting else None
        row = {
            "budget": f"{fraction:g} x {reference['method']}",
            "budget_tok": budget.tok,
            "budget_lat": budget.lat,
            # P@B of the team as written: its best one-backbone choice whose Tok and Lat fit the budget
            "as_written_best_fitting": (
                {k: best_written[k] for k in ("backbone", "perf", "tok", "lat")} if best_written else None
            ),
            "agentbalance": {
                **balanced,
                "meets_budget": balanced["tok"] <= budget.tok and balanced["lat"] <= budget.lat,
                "train_seconds": round(seconds, 1),
                "runner_test": built.result.test.to_json(),  # the same questions through agentbalance's runner
            },
        }
        rows.append(row)
        written_text = "none fits"
        if best_written:
            written_text = f"{100 * best_written['perf']:.1f}% ({best_written['backbone']})"
        print(f"budget {row['budget']}: as written {written_text}; + agentbalance {line(balanced)}", flush=True)

    document = {
        "command": (
            f"python benchmarks/autogen_plugin.py --queries {args.queries} --epochs {args.epochs} "
            f"--fractions {args.fractions} --seed {args.seed}"
        ),
        "world": f"{world.name} (a calibrated simulator; Perf is the share of held-out synthetic questions right)",
        "units": {"tok": "USD per 100 queries", "lat": "seconds per query (modelled critical path)"},
        "team": {"roles": list(roles.names), "decision": decision, "critics": list(critics), "domains": domains},
        "test_queries": len(test),
        "as_written": arms,
        "at_budget": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "autogen_plugin.json"
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out} in {document['seconds']} s")


if __name__ == "__main__":
    main()
