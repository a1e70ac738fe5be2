"""Measure, on the real recordings, what makes two backbones' answers agree: the statistics behind the simulator's
wrong-answer model (docs/simulated-world.md, "Why answers agree"). Read-only on ../shared/data; no simulator here.

* how often two wrong backbones pick the same answer, per world (options: 10 on MMLU-Pro, 4 on ARC, free-form ...);
* on MMLU-Pro, how that depends on the backbones: a rank-1 fit P(same | both wrong) = 1/9 + l_m l_n D gives each
  backbone's share l_m of considered (not guessed) wrong answers, and D the appeal's concentration;
* how often a wrong answer has no readable answer at all, and whether that is independent across backbones;
* how much difficulty is shared: the share of questions no backbone / every backbone solves, the error correlation
  by pair strength, and each backbone's slope against the others' solve rate (lower for weak backbones).
Run: .venv/bin/python benchmarks/agreement_mechanisms.py   (writes benchmarks/results/agreement_mechanisms.json)
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
WORLDS = ("mmlu-pro-dev", "routerbench-arc-challenge", "routerbench-winograde", "gsm8k-reasoning-dev", "date-mot-dev")


def load(world: str) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """Question x model tables of answers ("" = none readable) and correctness (sample 0), and options per question."""
    outcomes = pd.read_csv(SHARED / world / "outcomes.csv.gz", keep_default_na=False, dtype={"id": str, "answer": str})
    if "sample" in outcomes.columns:
        outcomes = outcomes[outcomes["sample"].astype(int) == 0]
    answers = outcomes.pivot(index="id", columns="model", values="answer")
    correct = outcomes.pivot(index="id", columns="model", values="correct").astype(int).astype(bool)
    with (SHARED / world / "questions.jsonl").open(encoding="utf-8") as lines:
        questions = [json.loads(line) for line in lines]
    options = {q["id"]: len(q["choices"] or ()) for q in questions}
    return answers, correct, options


def coincidence(answers: np.ndarray, correct: np.ndarray, i: int, j: int, rows: np.ndarray | None = None) -> float:
    """P(same answer | both wrong, both answered) for backbones i and j (over `rows` if given)."""
    both_wrong = ~correct[:, i] & ~correct[:, j] & (answers[:, i] != "") & (answers[:, j] != "")
    if rows is not None:
        both_wrong &= rows
    return float((answers[both_wrong, i] == answers[both_wrong, j]).mean()) if both_wrong.any() else float("nan")


def unreadable(answers: np.ndarray, correct: np.ndarray) -> dict[str, float]:
    """P(no readable answer | wrong): pooled, per backbone (quartiles), and whether it is independent across pairs."""
    empty = answers == ""
    per_model = np.array([empty[~correct[:, m], m].mean() for m in range(answers.shape[1])])
    observed, independent = [], []
    for i, j in itertools.combinations(range(answers.shape[1]), 2):
        both_wrong = ~correct[:, i] & ~correct[:, j]
        if both_wrong.any():
            observed.append((~empty[both_wrong, i] & ~empty[both_wrong, j]).mean())
            independent.append((1 - per_model[i]) * (1 - per_model[j]))
    return {
        "pooled": round(float(empty[~correct].mean()), 4),
        "per_backbone_min_median_max": [round(float(f(per_model)), 4) for f in (np.min, np.median, np.max)],
        "ever_correct_when_unreadable": bool((empty & correct).any()),
        "p_both_readable_given_both_wrong_observed": round(float(np.mean(observed)), 4),
        "p_both_readable_given_both_wrong_if_independent": round(float(np.mean(independent)), 4),
    }


def considered_errors(
    answers: np.ndarray, correct: np.ndarray, accuracy: np.ndarray, names: list[str]
) -> dict[str, object]:
    """Ten-option questions of MMLU-Pro: log(c_mn - 1/9) = log D + log l_m + log l_n by least squares, l scaled
    to at most 1; then the competence scale t of l = 1 - exp(-accuracy / t) and the Dirichlet alpha of D."""
    m = answers.shape[1]
    design, target = [], []
    for i, j in itertools.combinations(range(m), 2):
        row = np.zeros(m + 1)
        row[[0, 1 + i, 1 + j]] = 1
        design.append(row)
        target.append(math.log(coincidence(answers, correct, i, j) - 1 / 9))
    coefficients = np.linalg.lstsq(np.array(design), np.array(target), rcond=None)[0]
    share = np.exp(coefficients[1:])
    concentration = math.exp(coefficients[0]) * share.max() ** 2
    share /= share.max()
    scales = np.arange(0.05, 0.5, 0.005)
    errors = [float(np.sqrt(np.mean((1 - np.exp(-accuracy / t) - share) ** 2))) for t in scales]
    scale = float(scales[int(np.argmin(errors))])
    same = concentration + 1 / 9  # E[sum of squared appeals] over 9 wrong options, for l = 1
    alpha = (1 - same) / (9 * same - 1)  # a symmetric Dirichlet(alpha) over 9 options has E[sum p^2] = (a+1)/(9a+1)
    return {
        "considered_share_by_backbone": {names[k]: round(float(share[k]), 3) for k in np.argsort(accuracy)},
        "corr_accuracy_considered_share": round(float(np.corrcoef(accuracy, share)[0, 1]), 3),
        "fitted_competence_scale": round(scale, 3),
        "fit_rms": round(min(errors), 4),
        "p_same_given_both_wrong_if_all_considered_10_options": round(same, 4),
        "dirichlet_alpha": round(alpha, 3),
        "implied_p_same_4_options": round((alpha + 1) / (3 * alpha + 1), 4),
    }


def shared_difficulty(correct: np.ndarray, accuracy: np.ndarray) -> dict[str, object]:
    """Solvers per question, the error phi by the weaker member's accuracy, and each backbone's logistic slope
    against the logit of the other backbones' solve rate (the same for all under one discrimination)."""
    m = correct.shape[1]
    solvers = correct.sum(axis=1)
    phis, weaker = [], []
    for i, j in itertools.combinations(range(m), 2):
        phis.append(np.corrcoef(correct[:, i], correct[:, j])[0, 1])
        weaker.append(min(accuracy[i], accuracy[j]))
    phis_arr, weaker_arr = np.array(phis), np.array(weaker)
    terciles = np.quantile(weaker_arr, [1 / 3, 2 / 3])
    groups = np.digitize(weaker_arr, terciles)
    slopes = []
    for k in range(m):
        others = (solvers - correct[:, k] + 0.5) / m
        slopes.append(_logistic_slope(np.log(others / (1 - others)), correct[:, k]))
    return {
        "share_solved_by_none": round(float((solvers == 0).mean()), 4),
        "share_solved_by_all": round(float((solvers == m).mean()), 4),
        "error_phi_median": round(float(np.median(phis_arr)), 4),
        "error_phi_by_weaker_accuracy_tercile": [round(float(phis_arr[groups == g].mean()), 4) for g in range(3)],
        "corr_accuracy_slope_on_others": round(float(np.corrcoef(accuracy, slopes)[0, 1]), 3),
    }


def _logistic_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Slope b of P(y) = sigmoid(c + b x) by Newton's method (two parameters, no regularisation)."""
    weights = np.zeros(2)
    design = np.column_stack([np.ones_like(x), x])
    for _ in range(50):
        p = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (y - p)
        hessian = (design * (p * (1 - p))[:, None]).T @ design
        weights += np.linalg.solve(hessian, gradient)
    return float(weights[1])


def main() -> None:
    if not SHARED.is_dir():
        raise SystemExit(f"{SHARED} is absent: these statistics are measured on its recordings")
    worlds: dict[str, dict[str, object]] = {}
    for world in WORLDS:
        answers_table, correct_table, options = load(world)
        answers, correct = answers_table.to_numpy(), correct_table.to_numpy()
        names = list(answers_table.columns)
        accuracy = correct.mean(axis=0)
        pairs = list(itertools.combinations(range(len(names)), 2))
        same = [coincidence(answers, correct, i, j) for i, j in pairs]
        entry: dict[str, object] = {
            "questions": len(answers),
            "backbones": len(names),
            "options": dict(sorted(pd.Series([options[q] for q in answers_table.index]).value_counts().items())),
            "p_same_given_both_wrong_mean_over_pairs": round(float(np.nanmean(same)), 4),
            "unreadable_given_wrong": unreadable(answers, correct),
        }
        if world == "mmlu-pro-dev":
            ten = np.array([options[q] == 10 for q in answers_table.index])
            entry["considered_errors_10_options"] = considered_errors(answers[ten], correct[ten], accuracy, names)
            entry["shared_difficulty"] = shared_difficulty(correct, accuracy)
        if world == "routerbench-arc-challenge":
            entry["shared_difficulty"] = shared_difficulty(correct, accuracy)
        worlds[world] = entry
        print(world, json.dumps(entry)[:400], flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {"command": "python benchmarks/agreement_mechanisms.py", "worlds": worlds}
    (RESULTS / "agreement_mechanisms.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
