"""Sensitivity of the trained controller to its hand-set knobs (the paper's Figure 5, its mode: no budget).

In the paper's mode the reward is Perf - lambda_tok * Tok - lambda_lat * Lat with both lambdas fixed by hand,
the difficulty offset delta is the user's (no calibration on validation without a budget), and lambda_len
penalises the expected chain length. Starting from the defaults (lambda_tok 1, lambda_lat 0.01, delta 0,
lambda_len 0.02), vary ONE knob at a time over its grid, train a controller (one Experiment per world, so
every setting sees the same pools, splits and embeddings) and report its test Perf, Tok, Lat and what it
built (pools, agents, depths, backbones, mean expected chain length). Worlds: the simulator, and the
mmlu-pro-dev replay world when ../shared/data/mmlu-pro-dev exists. Training is deterministic, so the
default setting, which lies on every grid, is trained once per world and shared by the four knobs.
Run: .venv/bin/python benchmarks/sensitivity.py
(writes benchmarks/results/sensitivity.json and benchmarks/results/sensitivity.png)
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from agentbalance.budgets import Budget
from agentbalance.executors import ExecutorSpec, add_executor_arguments, map_in_order
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.plots import save_figure  # importing agentbalance.plots selects the Agg backend
from agentbalance.policy.budget_input import budget_condition
from agentbalance.policy.controller import ControllerConfig
from agentbalance.train.build import BuildSpec, one_torch_thread, train_on
from agentbalance.train.config import TrainConfig

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"

DEFAULTS: dict[str, float] = {"lambda_tok": 1.0, "lambda_lat": 0.01, "delta": 0.0, "lambda_len": 0.02}
# Tok spans ~0.005-1 USD/100 queries and Lat ~1-30 s/query in these worlds, so lambda_tok from 0 to 10 and
# lambda_lat from 0 to 0.1 move the optimum from "strongest MAS whatever it costs" to "cheapest backbone";
# the difficulty is in (0, 1) with the pool thresholds spread over it, so delta +-0.4 moves queries by one or
# more pools (cheaper below 0, costlier above); lambda_len * L_max is added to the loss, whose policy-gradient
# part has normalised advantages (order 1), so 0 to 1 goes from no length penalty to one that dominates it.
GRIDS: dict[str, tuple[float, ...]] = {
    "lambda_tok": (0.0, 0.3, 1.0, 3.0, 10.0),
    "lambda_lat": (0.0, 0.003, 0.01, 0.03, 0.1),
    "delta": (-0.4, -0.2, 0.0, 0.2, 0.4),
    "lambda_len": (0.0, 0.02, 0.1, 0.3, 1.0),
}
LABELS = {"lambda_tok": "λ_tok", "lambda_lat": "λ_lat", "delta": "δ", "lambda_len": "λ_len"}
WORLD_NAMES = {"sim": "simulated", "mmlu-pro-dev": "mmlu-pro-dev"}  # --worlds choice -> name in the results


def setting_spec(world: str, knobs: dict[str, float], args: argparse.Namespace) -> BuildSpec:
    """The paper's mode: no budget axes, both lambdas fixed by hand, delta and lambda_len as given."""
    train = TrainConfig(
        epochs=args.epochs,
        lambda_tok=knobs["lambda_tok"],
        lambda_lat=knobs["lambda_lat"],
        length_penalty=knobs["lambda_len"],
    )
    return BuildSpec(
        ExperimentSpec(world=world, sizes=tuple(args.sizes), seed=args.seed),
        budget=Budget(),
        train=train,
        controller=ControllerConfig(delta=knobs["delta"]),
        restarts=args.restarts,
    )


def measure_setting(experiment: Experiment, spec: BuildSpec) -> dict[str, object]:
    """Train on the shared experiment, then the test split's means, what was built and the mean L_max."""
    started = time.perf_counter()
    with one_torch_thread():
        controller, _, result = train_on(experiment, spec)
        test = experiment.splits.test
        with torch.no_grad():  # the greedy policy's L_max, at the delta and (empty) condition it builds with
            step = controller(experiment.embed(test), budget_condition(spec.budget, len(test)), mode="greedy")
    return {
        **result.test.to_json(),
        "expected_chain_length": float(step.expected_length.mean()),
        "anchored": result.anchored,
        "seconds": round(time.perf_counter() - started, 1),
    }


def run_world(name: str, world: str, args: argparse.Namespace) -> dict[str, object]:
    """Every knob's grid on one world, the other knobs at their defaults."""
    experiment = Experiment.open(setting_spec(world, DEFAULTS, args).experiment)
    measured: dict[tuple[float, ...], dict[str, object]] = {}  # settings -> test results (default shared)
    knobs: dict[str, list[dict[str, object]]] = {}
    for knob, grid in GRIDS.items():
        rows = []
        for value in grid:
            settings = {**DEFAULTS, knob: value}
            key = tuple(settings[k] for k in DEFAULTS)
            if key not in measured:
                measured[key] = measure_setting(experiment, setting_spec(world, settings, args))
            test = measured[key]
            rows.append({"value": value, "test": test})
            print(
                name,
                f"{knob}={value:g}",
                f"perf {test['perf']:.3f} tok {test['tok']:.4f} lat {test['lat']:.2f}",
                f"pools {test['pools']} agents {test['agent_counts']} L {test['expected_chain_length']:.2f}",
                f"({test['seconds']} s)",
                flush=True,
            )
        knobs[knob] = rows
    return {"world": name, "spec": world, "test_n": len(experiment.splits.test), "knobs": knobs}


def plot(worlds: list[dict[str, object]], path: Path) -> None:
    """One panel per knob: test Perf (solid, left axis) and Tok (dashed, right axis), one colour per world."""
    figure, axes = plt.subplots(1, len(GRIDS), figsize=(4.2 * len(GRIDS), 3.8))
    palette = plt.get_cmap("tab10")
    for axis, knob in zip(axes, GRIDS, strict=True):
        twin = axis.twinx()
        for index, report in enumerate(worlds):
            rows = report["knobs"][knob]  # type: ignore[index]
            values = [row["value"] for row in rows]
            colour = palette(index % 10)
            axis.plot(values, [row["test"]["perf"] for row in rows], marker="o", color=colour, label=report["world"])
            twin.plot(values, [row["test"]["tok"] for row in rows], marker="x", linestyle="--", color=colour)
        if min(GRIDS[knob]) >= 0:  # lambdas span orders of magnitude and include 0
            linear = min(v for v in GRIDS[knob] if v > 0)
            axis.set_xscale("symlog", linthresh=linear)
        axis.axvline(DEFAULTS[knob], color="0.6", linestyle=":", linewidth=1)
        axis.set_xlabel(f"{LABELS[knob]} (default {DEFAULTS[knob]:g})")
        axis.set_ylabel("Perf (test, solid)")
        twin.set_ylabel("Tok, USD / 100 queries (dashed)")
        axis.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle("sensitivity of the trained controller (one knob varied, the others at their defaults)")
    save_figure(figure, path, dpi=130)


def world_of(chosen: tuple[str, str], args: argparse.Namespace) -> dict[str, object]:
    return run_world(*chosen, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", nargs="+", choices=list(WORLD_NAMES), default=list(WORLD_NAMES))
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--restarts", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs=3, default=[600, 200, 400], metavar=("TRAIN", "VAL", "TEST"))
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of the JSON and PNG (default: %(default)s)")
    add_executor_arguments(parser)  # --executor ray: each world a Ray task
    args = parser.parse_args()
    chosen = []
    for choice in args.worlds:
        if choice == "sim":
            chosen.append((WORLD_NAMES[choice], "sim"))
        elif (SHARED / choice).is_dir():
            chosen.append((WORLD_NAMES[choice], f"replay:{SHARED / choice}"))
        else:
            print(f"skipping {choice}: {SHARED / choice} not found")
    unit = functools.partial(world_of, args=args)
    worlds = map_in_order(ExecutorSpec(args.executor, args.address), unit, chosen)
    command = (
        f"python benchmarks/sensitivity.py --worlds {' '.join(args.worlds)} --epochs {args.epochs} "
        f"--restarts {args.restarts} --seed {args.seed} --sizes {' '.join(map(str, args.sizes))}"
    )
    report = {"command": command, "defaults": DEFAULTS, "grids": GRIDS, "worlds": worlds}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sensitivity.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    plot(worlds, args.out / "sensitivity.png")


if __name__ == "__main__":
    main()
