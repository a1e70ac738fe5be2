"""Inductive use (paper §4.4): a controller trained without some backbones, used with them, unretrained.

For the simulator and the mmlu-pro-dev replay world (when present): remove two backbones that the
Pareto filter keeps, build a controller on the rest, then evaluate it unchanged (1) on the reduced
catalog, (2) with the two backbones added back, (3) in the simulator, also with the four backbones of
pools/qwen3-deepseek-extra.yaml added. Reference: a controller retrained on each full catalog. Same
budget, seed and test split everywhere.
Run: .venv/bin/python benchmarks/inductive.py  (writes benchmarks/results/inductive.json)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import yaml

from agentbalance.budgets import Budget
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.trained import TrainedController

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"


def write_catalog(backbones: list[dict[str, object]], folder: Path, name: str) -> str:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"backbones": backbones}, sort_keys=False), encoding="utf-8")
    return str(path)


def catalog_entries(path: Path) -> list[dict[str, object]]:
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["backbones"])


def measure(folder: Path, spec: BuildSpec) -> dict[str, object]:
    """The saved controller over the spec's catalog (pools rebuilt), on the spec's test split."""
    experiment = Experiment.open(spec.experiment)
    controller = TrainedController.load(folder, world=experiment.world, encoder=experiment.encoder)
    evaluation = controller.evaluate(experiment.world, "test", spec=spec.experiment)
    return {
        "catalog_size": len(experiment.world.catalog),
        "pools": experiment.pools.pools,
        "perf": evaluation.perf,
        "tok": evaluation.tok,
        "lat": evaluation.lat,
        "backbones_used": evaluation.backbones,
    }


def run_world(name: str, world: str, full: Path, extra: Path | None, budget: Budget, epochs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        entries = catalog_entries(full)
        probe = Experiment.open(ExperimentSpec(world=world, catalog=str(full), sizes=(10, 10, 10)))
        kept = probe.kept
        removed = [kept[len(kept) // 2 - 1], kept[len(kept) // 2]]  # two mid-tier backbones the filter keeps
        reduced = write_catalog([e for e in entries if e["name"] not in removed], folder, "reduced")
        catalogs = {"reduced": reduced, "added_back": str(full)}
        if extra is not None:
            catalogs["added_back_plus_extra"] = write_catalog(entries + catalog_entries(extra), folder, "plus-extra")

        def spec(catalog: str) -> BuildSpec:
            experiment = ExperimentSpec(world=world, catalog=catalog)
            return BuildSpec(experiment, budget=budget, train=TrainConfig(epochs=epochs))

        trained = folder / "trained-reduced"
        build(spec(reduced), trained)
        report: dict[str, object] = {"world": name, "budget": budget.__dict__, "removed": removed}
        for label, catalog in catalogs.items():
            unretrained = measure(trained, spec(catalog))
            row: dict[str, object] = {"unretrained": unretrained}
            if label != "reduced":
                retrained_folder = folder / f"retrained-{label}"
                build(spec(catalog), retrained_folder)
                row["retrained"] = measure(retrained_folder, spec(catalog))
            report[label] = row
            print(name, label, {k: row[k]["perf"] for k in row})  # type: ignore[index]
        return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=25)
    args = parser.parse_args()
    shipped = REPO / "pools"
    worlds = [run_world("simulated", "sim", shipped / "qwen3-deepseek.yaml", shipped / "qwen3-deepseek-extra.yaml",
                        Budget(0.15, 60.0), args.epochs)]  # fmt: skip
    if (SHARED / "mmlu-pro-dev").is_dir():
        folder = SHARED / "mmlu-pro-dev"
        worlds.append(run_world("mmlu-pro-dev", f"replay:{folder}", folder / "models.yaml", None,
                                Budget(0.02, 30.0), args.epochs))  # fmt: skip
    report = {"command": f"python benchmarks/inductive.py --epochs {args.epochs}", "worlds": worlds}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "inductive.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
