"""Does the simulator agree with real data on agreement? For every pair of backbones of mmlu-pro-dev's catalog,
P(both give the same answer) and P(that answer is right | they agree), in the real recordings (all questions)
and in the simulator run with the same `models.yaml` (general-knowledge questions), and the absolute
differences: mean over pairs and the worst pair, for both quantities. A cascade's cost and accuracy are made
of these two numbers, so the simulator's cascade results mean something only where they match.
Run: .venv/bin/python benchmarks/agreement_realism.py   (writes benchmarks/results/agreement_realism.json)
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations
from pathlib import Path

import numpy as np

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS
from agentbalance.roles import RoleSet
from agentbalance.runtime.rollout import rollout_execution
from agentbalance.splits import synthetic_split
from agentbalance.worlds import open_world
from agentbalance.worlds.replay import ReplayWorld

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
ROLE = "Knowledgeable Expert"


def answers_of(world, roles: RoleSet, queries, backbones) -> dict[str, tuple[list[str | None], list[bool]]]:  # type: ignore[no-untyped-def]
    """Each backbone alone on every query: its answers and whether each is right."""
    table = {}
    for backbone in backbones:
        mas = MAS.single(ROLE, backbone)
        runs = [rollout_execution(world, roles, mas, q).outcome() for q in queries]
        table[backbone] = ([o.answer or None for o in runs], [bool(o.correct) for o in runs])
    return table


def pair_statistics(table: dict[str, tuple[list[str | None], list[bool]]]) -> dict[str, dict[str, float]]:
    """Per pair: P(agree) (both answered, same answer) and P(correct | agree)."""
    rows = {}
    for first, second in combinations(sorted(table), 2):
        (a, right), (b, _) = table[first], table[second]
        agree = np.array([x is not None and x == y for x, y in zip(a, b, strict=True)])
        correct = np.array(right)
        rows[f"{first} | {second}"] = {
            "p_agree": float(agree.mean()),
            "p_correct_given_agree": float(correct[agree].mean()) if agree.any() else float("nan"),
        }
    return rows


def differences(real: dict[str, dict[str, float]], simulated: dict[str, dict[str, float]]) -> dict[str, float]:
    out = {}
    for quantity in ("p_agree", "p_correct_given_agree"):
        gaps = [abs(real[p][quantity] - simulated[p][quantity]) for p in real]
        gaps = [g for g in gaps if np.isfinite(g)]
        out[f"{quantity}_mean_abs_diff_points"] = round(100 * float(np.mean(gaps)), 2)
        out[f"{quantity}_max_abs_diff_points"] = round(100 * float(np.max(gaps)), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000, help="simulated general-knowledge questions")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = SHARED / "mmlu-pro-dev"
    if not folder.is_dir():
        raise SystemExit(f"{folder} is absent: this benchmark compares against its recordings")
    roles = RoleSet.load("general")
    replay = ReplayWorld.load(folder)
    recorded = [q for split in ("train", "val", "test") for q in replay.queries(split)]
    backbones = list(replay.catalog.names)
    real = pair_statistics(answers_of(replay, roles, recorded, backbones))
    simulator = open_world("sim", catalog=Catalog.load(folder / "models.yaml"), seed=args.seed)
    questions = synthetic_split("test", args.queries, seed=args.seed, domains=("general",))
    simulated = pair_statistics(answers_of(simulator, roles, questions, backbones))
    summary = differences(real, simulated)
    print(json.dumps(summary), flush=True)
    report = {
        "command": "python benchmarks/agreement_realism.py " + " ".join(sys.argv[1:]),
        "targets": "mean abs difference <= 3 points and max <= 8, for both quantities (issue #19)",
        "summary": summary,
        "pairs": {p: {"real": real[p], "simulated": simulated[p]} for p in real},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "agreement_realism.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
