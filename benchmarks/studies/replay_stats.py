"""Measure statistics of the real recorded replay-world outcomes that the simulated world must reproduce.
Read-only on the data: it never modifies or writes anything under --data; it writes only the results JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
OUT = Path(__file__).resolve().parent / "results" / "replay_stats.json"

MCQ_WORLDS = ["mmlu-pro-dev", "routerbench-arc-challenge", "routerbench-winograde", "routerbench-mbpp"]
GSM8K_WORLD = "gsm8k-reasoning-dev"
STRONG_ACC = 0.4  # "meaningful" models: accuracy at least this
N_GROUPS = 500  # random majority-vote groups per k
GROUP_SIZES = (3, 5)
N_DIFFICULTY_BINS = 5
MAX_EXHAUSTIVE_GROUPS = 5000  # also score every group when there are at most this many


# ----------------------------------------------------------------------------- loading


def load_world(folder: Path) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Return the outcomes table and the models.yaml entries by name (read-only)."""
    outcomes = pd.read_csv(folder / "outcomes.csv.gz", keep_default_na=False, dtype={"id": str, "answer": str})
    outcomes["correct"] = outcomes["correct"].astype(int)
    outcomes["completion_tokens"] = pd.to_numeric(outcomes["completion_tokens"], errors="coerce")
    outcomes["cost_usd"] = pd.to_numeric(outcomes["cost_usd"], errors="coerce")
    with (folder / "models.yaml").open(encoding="utf-8") as fh:
        catalog = yaml.safe_load(fh) or {}
    models = {entry["name"]: entry for entry in catalog.get("backbones", [])}
    return outcomes, models


def wide(outcomes: pd.DataFrame, column: str) -> pd.DataFrame:
    """Question x model table of one outcome column, keeping only questions every model answered."""
    table = outcomes.pivot(index="id", columns="model", values=column)
    return table.dropna(axis=0, how="any")


# ----------------------------------------------------------------------------- small helpers


def summary(values: np.ndarray) -> dict[str, Any]:
    """min / quartiles / max / mean of the finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"n": 0}
    q = np.percentile(v, [0, 25, 50, 75, 100])
    keys = ("min", "q25", "median", "q75", "max")
    return {"n": int(v.size), **dict(zip(keys, q.tolist(), strict=True)), "mean": float(v.mean())}


def phi_matrix(indicators: np.ndarray) -> np.ndarray:
    """Pearson correlation between the columns of a 0/1 matrix; NaN where a column is constant."""
    x = indicators.astype(float)
    x = x - x.mean(axis=0)
    sd = np.sqrt((x**2).mean(axis=0))
    cov = x.T @ x / x.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = cov / np.outer(sd, sd)
    phi[:, sd == 0] = np.nan
    phi[sd == 0, :] = np.nan
    return phi


def upper(matrix: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """Upper-triangle entries (pairs i < j), optionally only pairs where both keep[i] and keep[j]."""
    i, j = np.triu_indices(matrix.shape[0], k=1)
    if keep is not None:
        mask = keep[i] & keep[j]
        i, j = i[mask], j[mask]
    return matrix[i, j]


def clean(obj: Any) -> Any:
    """JSON-safe copy: NaN/inf -> None, numpy scalars -> Python, floats rounded to 4 decimals."""
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return round(float(obj), 4) if math.isfinite(obj) else None
    return obj


# ----------------------------------------------------------------------------- A: multiple-choice worlds


def error_correlation(correct: pd.DataFrame, acc: pd.Series) -> dict[str, Any]:
    """Pairwise phi of the models' 0/1 error indicators, all pairs and pairs of strong models."""
    phi = phi_matrix(1 - correct.to_numpy())
    strong = (acc >= STRONG_ACC).to_numpy()
    return {
        "all_pairs": summary(upper(phi)),
        f"pairs_both_acc_ge_{STRONG_ACC}": summary(upper(phi, strong)),
    }


def difficulty_bins(correct: pd.DataFrame) -> pd.Series:
    """Five equal-count bins (0 = hardest) by the fraction of all models that solve each question."""
    solve = correct.mean(axis=1)
    return pd.qcut(solve.rank(method="first"), N_DIFFICULTY_BINS, labels=False)


def error_correlation_within_bins(correct: pd.DataFrame, acc: pd.Series) -> dict[str, Any]:
    """Mean pairwise error phi inside each difficulty bin: the correlation left once difficulty is fixed."""
    bins = difficulty_bins(correct)
    solve = correct.mean(axis=1)
    strong = (acc >= STRONG_ACC).to_numpy()
    rows, all_means, strong_means = [], [], []
    for b in range(N_DIFFICULTY_BINS):
        in_bin = (bins == b).to_numpy()
        phi = phi_matrix(1 - correct.to_numpy()[in_bin])
        pairs, strong_pairs = upper(phi), upper(phi, strong)
        row = {
            "bin": b,
            "n_questions": int(in_bin.sum()),
            "solve_rate_range": [float(solve[in_bin].min()), float(solve[in_bin].max())],
            "mean_phi_all_pairs": float(np.nanmean(pairs)) if np.isfinite(pairs).any() else None,
            "median_phi_all_pairs": float(np.nanmedian(pairs)) if np.isfinite(pairs).any() else None,
            "n_defined_pairs": int(np.isfinite(pairs).sum()),
            "mean_phi_strong_pairs": float(np.nanmean(strong_pairs)) if np.isfinite(strong_pairs).any() else None,
        }
        rows.append(row)
        all_means.append(row["mean_phi_all_pairs"])
        strong_means.append(row["mean_phi_strong_pairs"])
    finite = [m for m in all_means if m is not None]
    finite_strong = [m for m in strong_means if m is not None]
    return {
        "bins": rows,
        "mean_over_bins_all_pairs": float(np.mean(finite)) if finite else None,
        "mean_over_bins_strong_pairs": float(np.mean(finite_strong)) if finite_strong else None,
        "note": "bins are quintiles of the fraction of all models correct (0 = hardest); constant columns skipped",
    }


def letter_codes(letters: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Integer code per chosen letter (-1 = empty answer, abstains) and the letter alphabet."""
    alphabet = sorted({a for a in np.unique(letters.to_numpy()) if a})
    index = {a: i for i, a in enumerate(alphabet)}
    codes = np.vectorize(lambda a: index.get(a, -1), otypes=[int])(letters.to_numpy())
    return codes, alphabet


def letter_correct_table(codes: np.ndarray, correct: np.ndarray, n_letters: int) -> np.ndarray:
    """Question x letter: 1 if choosing that letter was graded correct (same letter, same grade in the data)."""
    table = np.zeros((codes.shape[0], n_letters), dtype=bool)
    rows, cols = np.nonzero((codes >= 0) & (correct == 1))
    table[rows, codes[rows, cols]] = True
    return table


def vote_accuracy(group: list[int], codes: np.ndarray, letter_ok: np.ndarray, acc: np.ndarray) -> float:
    """Accuracy of the plurality vote of a group; ties go to the letter of the most accurate member."""
    members = sorted(group, key=lambda m: -acc[m])
    n_q, n_letters = letter_ok.shape
    k = len(members)
    rows = np.arange(n_q)
    counts = np.zeros((n_q, n_letters))
    priority = np.zeros((n_q, n_letters))
    for rank, m in enumerate(members):
        has = codes[:, m] >= 0
        r, c = rows[has], codes[has, m]
        counts[r, c] += 1
        priority[r, c] = np.maximum(priority[r, c], k - rank)
    winner = np.argmax(counts * (k + 1) + priority, axis=1)
    voted = counts.max(axis=1) > 0
    return float((voted & letter_ok[rows, winner]).mean())


def vote_gains(groups: list[list[int]], codes: np.ndarray, letter_ok: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Vote accuracy minus the best member's accuracy, per group."""
    return np.array([vote_accuracy(g, codes, letter_ok, acc) - acc[g].max() for g in groups])


def majority_vote(correct: pd.DataFrame, letters: pd.DataFrame, acc: pd.Series) -> dict[str, Any]:
    """Majority-vote gain over the best member for random strong groups and for the top-k group."""
    codes, alphabet = letter_codes(letters)
    if not alphabet:
        return {"skipped": "no option letters recorded (code task)"}
    acc_arr = acc.to_numpy()
    letter_ok = letter_correct_table(codes, correct.to_numpy(), len(alphabet))
    strong = np.flatnonzero(acc_arr >= STRONG_ACC)
    result: dict[str, Any] = {"n_strong_models": int(strong.size)}
    for k in GROUP_SIZES:
        top = [int(m) for m in np.argsort(-acc_arr)[:k]]
        top_gain = vote_gains([top], codes, letter_ok, acc_arr)[0]
        entry: dict[str, Any] = {
            "top_k_group": [correct.columns[m] for m in top],
            "top_k_vote_acc": top_gain + acc_arr[top].max(),
            "top_k_gain": top_gain,
        }
        if strong.size >= k:
            rng = np.random.default_rng(0)
            groups = [[int(m) for m in rng.choice(strong, size=k, replace=False)] for _ in range(N_GROUPS)]
            gains = vote_gains(groups, codes, letter_ok, acc_arr)
            entry["random_groups"] = {**summary(gains), "frac_positive": float((gains > 0).mean())}
            entry["n_possible_groups"] = math.comb(int(strong.size), k)
            if entry["n_possible_groups"] <= MAX_EXHAUSTIVE_GROUPS:
                every = [list(g) for g in combinations(strong.tolist(), k)]
                all_gains = vote_gains(every, codes, letter_ok, acc_arr)
                entry["all_groups"] = {**summary(all_gains), "frac_positive": float((all_gains > 0).mean())}
        result[f"k{k}"] = entry
    return result


def solve_rate(correct: pd.DataFrame) -> dict[str, Any]:
    """Distribution of the per-question fraction of models correct."""
    rate = correct.mean(axis=1).to_numpy()
    counts, edges = np.histogram(rate, bins=10, range=(0.0, 1.0))
    return {
        "mean": float(rate.mean()),
        "sd": float(rate.std()),
        "frac_all_correct": float((rate == 1).mean()),
        "frac_none_correct": float((rate == 0).mean()),
        "hist_edges": edges.tolist(),
        "hist_counts": counts.tolist(),
        "hist_frac": (counts / counts.sum()).tolist(),
    }


def per_model(outcomes: pd.DataFrame, correct: pd.DataFrame, models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, median completion tokens, mean cost (where recorded) and catalog scores per model."""
    kept = outcomes[outcomes["id"].isin(correct.index)]
    tokens = kept.groupby("model")["completion_tokens"].median()
    cost = kept.groupby("model")["cost_usd"].mean()
    table = {}
    for name in correct.columns:
        entry = models.get(name, {})
        table[name] = {
            "accuracy": float(correct[name].mean()),
            "median_completion_tokens": float(tokens[name]),
            "mean_cost_usd": float(cost[name]) if pd.notna(cost[name]) else None,
            "reasoning": entry.get("reasoning"),
            "scores": entry.get("scores"),
        }
    return dict(sorted(table.items(), key=lambda kv: -kv[1]["accuracy"]))


def mcq_world_stats(folder: Path) -> dict[str, Any]:
    """Section A statistics of one world."""
    outcomes, models = load_world(folder)
    correct = wide(outcomes, "correct").astype(int)
    letters = wide(outcomes, "answer").loc[correct.index, correct.columns]
    acc = correct.mean(axis=0)
    return {
        "n_questions": int(correct.shape[0]),
        "n_models": int(correct.shape[1]),
        "n_strong_models": int((acc >= STRONG_ACC).sum()),
        "error_correlation": error_correlation(correct, acc),
        "error_correlation_within_difficulty_bins": error_correlation_within_bins(correct, acc),
        "majority_vote_gain": majority_vote(correct, letters, acc),
        "solve_rate": solve_rate(correct),
        "per_model": per_model(outcomes, correct, models),
    }


# ----------------------------------------------------------------------------- B: gsm8k reasoning world


def token_groups(outcomes: pd.DataFrame) -> dict[str, Any]:
    """Completion tokens of reasoning vs non-reasoning models, pooled and per model."""
    groups = outcomes.groupby("reasoning")["completion_tokens"]
    med, mean = groups.median(), groups.mean()
    per = outcomes.groupby("model").agg(
        reasoning=("reasoning", "first"),
        accuracy=("correct", "mean"),
        median_completion_tokens=("completion_tokens", "median"),
        mean_completion_tokens=("completion_tokens", "mean"),
    )
    return {
        "reasoning": {"median": float(med[True]), "mean": float(mean[True])},
        "non_reasoning": {"median": float(med[False]), "mean": float(mean[False])},
        "ratio_of_medians": float(med[True] / med[False]),
        "ratio_of_means": float(mean[True] / mean[False]),
        "per_model": per.sort_values("median_completion_tokens", ascending=False).to_dict(orient="index"),
    }


def easy_medium_hard(frac: pd.Series, n_models: int) -> pd.Series:
    """easy: every defining model correct; hard: at most half correct; medium: the rest."""
    labels = np.where(frac >= 1.0, "easy", np.where(frac * n_models <= n_models / 2, "hard", "medium"))
    return pd.Series(labels, index=frac.index)


def bin_row(outcomes: pd.DataFrame, ids: pd.Index) -> dict[str, Any]:
    """Accuracy and token figures of reasoning vs non-reasoning models on a set of questions."""
    rows = outcomes[outcomes["id"].isin(ids)]
    r, n = rows[rows["reasoning"]], rows[~rows["reasoning"]]
    acc_r, acc_n = float(r["correct"].mean()), float(n["correct"].mean())
    med_r, med_n = float(r["completion_tokens"].median()), float(n["completion_tokens"].median())
    return {
        "n_questions": len(ids),
        "acc_reasoning": acc_r,
        "acc_non_reasoning": acc_n,
        "acc_diff_reasoning_minus_non": acc_r - acc_n,
        "median_tokens_reasoning": med_r,
        "median_tokens_non_reasoning": med_n,
        "token_ratio_medians": med_r / med_n,
    }


def difficulty_table(outcomes: pd.DataFrame, correct: pd.DataFrame, non_reasoning: list[str]) -> dict[str, Any]:
    """Bins by the fraction of non-reasoning models correct, with accuracy and token rows."""
    labels = easy_medium_hard(correct[non_reasoning].mean(axis=1), len(non_reasoning))
    table = {name: bin_row(outcomes, labels.index[labels == name]) for name in ("easy", "medium", "hard")}
    med = outcomes.assign(bin=outcomes["id"].map(labels)).groupby(["reasoning", "bin"])["completion_tokens"].median()
    ratios = {
        "reasoning_hard_over_easy": float(med[(True, "hard")] / med[(True, "easy")]),
        "non_reasoning_hard_over_easy": float(med[(False, "hard")] / med[(False, "easy")]),
    }
    return {"bins": table, "token_ratio_hard_vs_easy": ratios}


def leave_one_out_table(outcomes: pd.DataFrame, correct: pd.DataFrame, non_reasoning: list[str]) -> dict[str, Any]:
    """Unbiased check: define bins by all but one non-reasoning model and score the held-out one."""
    sums: dict[str, dict[str, float]] = {
        b: {"n": 0.0, "held_out": 0.0, "reasoning": 0.0} for b in ("easy", "medium", "hard")
    }
    reasoning = [m for m in correct.columns if m not in non_reasoning]
    for held in non_reasoning:
        others = [m for m in non_reasoning if m != held]
        labels = easy_medium_hard(correct[others].mean(axis=1), len(others))
        for name in sums:
            ids = labels.index[labels == name]
            sums[name]["n"] += len(ids)
            sums[name]["held_out"] += float(correct.loc[ids, held].sum())
            sums[name]["reasoning"] += float(correct.loc[ids, reasoning].mean(axis=1).sum())
    table = {}
    for name, s in sums.items():
        acc_n = s["held_out"] / s["n"] if s["n"] else float("nan")
        acc_r = s["reasoning"] / s["n"] if s["n"] else float("nan")
        table[name] = {
            "question_slots": int(s["n"]),
            "acc_reasoning": acc_r,
            "acc_held_out_non_reasoning": acc_n,
            "acc_diff": acc_r - acc_n,
        }
    return {
        "bins": table,
        "note": "bins from 4 of the 5 non-reasoning models (hard: <= 2 of 4 correct); pooled over held-out choices",
    }


def gsm8k_stats(folder: Path) -> dict[str, Any]:
    """Section B statistics of the gsm8k reasoning world."""
    outcomes, models = load_world(folder)
    missing = sorted(set(outcomes["model"]) - set(models))
    if missing:
        raise SystemExit(f"replay_stats: models.yaml in {folder} has no entry for {missing}")
    outcomes["reasoning"] = outcomes["model"].map(lambda m: bool(models[m].get("reasoning")))
    correct = wide(outcomes, "correct").astype(int)
    outcomes = outcomes[outcomes["id"].isin(correct.index)]
    non_reasoning = [m for m in correct.columns if not models[m].get("reasoning")]
    return {
        "n_questions": int(correct.shape[0]),
        "reasoning_models": [m for m in correct.columns if models[m].get("reasoning")],
        "non_reasoning_models": non_reasoning,
        "completion_tokens": token_groups(outcomes),
        "by_difficulty": difficulty_table(outcomes, correct, non_reasoning),
        "by_difficulty_leave_one_out": leave_one_out_table(outcomes, correct, non_reasoning),
    }


# ----------------------------------------------------------------------------- printing and main


def fmt(d: dict[str, Any], keys: tuple[str, ...] = ("median", "q25", "q75", "mean")) -> str:
    return " ".join(f"{k}={d[k]:+.3f}" for k in keys if d.get(k) is not None)


def print_mcq(name: str, s: dict[str, Any]) -> None:
    ec = s["error_correlation"]
    print(f"\n== {name}: {s['n_questions']} questions, {s['n_models']} models ({s['n_strong_models']} with acc>=0.4)")
    print(f"  error phi, all pairs:    {fmt(ec['all_pairs'])}")
    print(f"  error phi, strong pairs: {fmt(ec[f'pairs_both_acc_ge_{STRONG_ACC}'])}")
    wb = s["error_correlation_within_difficulty_bins"]
    bins = " ".join(
        f"{b['mean_phi_all_pairs']:+.3f}" if b["mean_phi_all_pairs"] is not None else "n/a" for b in wb["bins"]
    )
    print(f"  within-difficulty-bin mean phi (hard->easy): {bins}  | mean {wb['mean_over_bins_all_pairs']:+.3f}")
    mv = s["majority_vote_gain"]
    if "skipped" in mv:
        print(f"  majority vote: skipped ({mv['skipped']})")
    for k in GROUP_SIZES:
        e = mv.get(f"k{k}")
        if e:
            rand = fmt(e["random_groups"]) if "random_groups" in e else "n/a"
            print(f"  vote gain k={k}: random {rand} | top-{k} {e['top_k_gain']:+.3f}")
    sr = s["solve_rate"]
    print(f"  solve rate mean={sr['mean']:.3f} sd={sr['sd']:.3f} hist={sr['hist_counts']}")


def print_gsm8k(s: dict[str, Any]) -> None:
    t = s["completion_tokens"]
    print(f"\n== {GSM8K_WORLD}: {s['n_questions']} questions")
    print(
        f"  tokens median reasoning={t['reasoning']['median']:.0f} non={t['non_reasoning']['median']:.0f} "
        f"ratio={t['ratio_of_medians']:.2f} (means ratio {t['ratio_of_means']:.2f})"
    )
    print("  bin     n   acc_R  acc_NR   diff  tokR/tokNR")
    for name, b in s["by_difficulty"]["bins"].items():
        print(
            f"  {name:<6}{b['n_questions']:>4}  {b['acc_reasoning']:.3f}  {b['acc_non_reasoning']:.3f}  "
            f"{b['acc_diff_reasoning_minus_non']:+.3f}  {b['token_ratio_medians']:.2f}"
        )
    r = s["by_difficulty"]["token_ratio_hard_vs_easy"]
    hard_easy = f"reasoning {r['reasoning_hard_over_easy']:.2f}, non {r['non_reasoning_hard_over_easy']:.2f}"
    print(f"  hard/easy median tokens: {hard_easy}")
    loo = " ".join(f"{k}={v['acc_diff']:+.3f}" for k, v in s["by_difficulty_leave_one_out"]["bins"].items())
    print(f"  leave-one-out acc diff (R - held-out NR): {loo}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="replay worlds folder (default ../shared/data)")
    parser.add_argument(
        "--out", type=Path, default=OUT, help="JSON output (default benchmarks/studies/results/replay_stats.json)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"replay_stats: data folder not found: {args.data} (pass --data DIR pointing at the replay worlds)")
    worlds: dict[str, Any] = {}
    for name in [*MCQ_WORLDS, GSM8K_WORLD]:
        folder = args.data / name
        if not (folder / "outcomes.csv.gz").is_file():
            worlds[name] = {"skipped": f"no outcomes.csv.gz in {folder}"}
            print(f"\n== {name}: skipped (no outcomes.csv.gz)")
            continue
        worlds[name] = gsm8k_stats(folder) if name == GSM8K_WORLD else mcq_world_stats(folder)
        print_gsm8k(worlds[name]) if name == GSM8K_WORLD else print_mcq(name, worlds[name])
    if all("skipped" in w for w in worlds.values()):
        sys.exit(f"replay_stats: no replay world found in {args.data}")
    payload = {"command": shlex.join(["python", "benchmarks/studies/replay_stats.py", *argv]), "worlds": worlds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(clean(payload), indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
