"""Measure, on the real recordings, what makes two backbones' answers agree: the statistics behind the simulator's
wrong-answer model (docs/simulated-world.md, "Why answers agree"). Read-only on ../shared/data; no simulator here
(only its rule for which backbones are related, `relation`, so that the measured classes are the modelled ones).

* how often two wrong backbones pick the same answer, per world (options: 10 on MMLU-Pro, 4 on ARC, free-form ...);
* on MMLU-Pro, how that depends on the backbones: a rank-1 fit P(same | both wrong) = 1/9 + l_m l_n D gives each
  backbone's share l_m of considered (not guessed) wrong answers, and D the appeal's concentration;
* how often a wrong answer has no readable answer at all, and whether that is independent across backbones;
* how much difficulty is shared: the share of questions no backbone / every backbone solves, the error correlation
  by pair strength, and each backbone's slope against the others' solve rate (lower for weak backbones);
* whether backbones of one catalog `family` err together beyond difficulty and pick the same wrong answers, in every
  world, raw and against different-family pairs of the same accuracies; split by same / other published size
  (`params_total_b`: the same size in one family, or in two point releases of one, "llama-3" and "llama-3.1", is in
  all likelihood one pretrained model) and by `instruct`; and the fit of the simulator's checkpoint model (a base
  model keeps all of its checkpoint's idiosyncrasy, a tuned one a share h_t) to those pairs.
Run: .venv/bin/python benchmarks/studies/agreement_mechanisms.py
(writes benchmarks/studies/results/agreement_mechanisms.json)
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from agentbalance.catalog import Backbone, Catalog
from agentbalance.worlds.simulated import relation

RESULTS = Path(__file__).resolve().parent / "results"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
WORLDS = ("mmlu-pro-dev", "routerbench-arc-challenge", "routerbench-winograde", "gsm8k-reasoning-dev", "date-mot-dev")
FAMILY_WORLDS = (*WORLDS, "routerbench-mbpp")  # code: correctness only, no answers to compare
MATCH_WINDOW = 0.03  # a control pair's lower and higher accuracies are each within this of the family pair's
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(24)


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


def both_below(h: np.ndarray, k: np.ndarray, rho: float) -> np.ndarray:
    """P(X < h, Y < k) for standard normals of correlation rho: Phi(h) Phi(k) + the integral over r in [0, rho] of
    their density at correlation r (Plackett's identity), by 24-point Gauss-Legendre quadrature."""
    r = rho * (_NODES + 1) / 2
    h2, k2, one_minus = h[:, None], k[:, None], 1 - r**2
    density = np.exp(-(h2**2 - 2 * r * h2 * k2 + k2**2) / (2 * one_minus)) / (2 * np.pi * np.sqrt(one_minus))
    return norm.cdf(h) * norm.cdf(k) + density @ _WEIGHTS * rho / 2


def latent_correlation(first: np.ndarray, second: np.ndarray, strata: np.ndarray) -> float:
    """Correlation of two backbones' latent solve noise beyond difficulty: questions are grouped by how many other
    backbones solve them, each backbone solves a group's question with its rate there, and rho is such that the
    expected count of questions both solve equals the observed one (a probit model given the group: the
    simulator's, whose noise is normal given the difficulty). Shared difficulty left within a group makes it
    positive for every pair; what matters is a pair class's excess over others."""
    thresholds_1, thresholds_2, sizes, observed = [], [], [], 0.0
    for group in np.unique(strata):
        rows = strata == group
        p1, p2 = first[rows].mean(), second[rows].mean()
        observed += float((first[rows] & second[rows]).sum())
        if min(p1, p2) == 0 or max(p1, p2) == 1:  # a sure outcome carries no correlation
            observed -= rows.sum() * p1 * p2
            continue
        thresholds_1.append(norm.ppf(p1))
        thresholds_2.append(norm.ppf(p2))
        sizes.append(rows.sum())
    h, k, n = np.array(thresholds_1), np.array(thresholds_2), np.array(sizes)
    low, high = -0.95, 0.99
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if float(n @ both_below(h, k, middle)) < observed else (low, middle)
    return (low + high) / 2


def pair_rows(answers: np.ndarray, correct: np.ndarray, backbones: list[Backbone]) -> pd.DataFrame:
    """Per pair: its relation, accuracies, error phi, latent correlation beyond difficulty (groups by the solvers
    among backbones of neither pair member's family, so that no family member's errors define the difficulty),
    P(same | both wrong and answered), and P(both readable | both wrong) against its value if independent."""
    accuracy = correct.mean(axis=0)
    families = [b.family for b in backbones]
    empty = answers == ""
    rows = []
    for i, j in itertools.combinations(range(len(backbones)), 2):
        others = [k for k in range(len(backbones)) if families[k] not in (families[i], families[j])]
        both_wrong = ~correct[:, i] & ~correct[:, j]
        readable = (~empty[both_wrong, i] & ~empty[both_wrong, j]).mean() if both_wrong.any() else math.nan
        independent = (1 - empty[~correct[:, i], i].mean()) * (1 - empty[~correct[:, j], j].mean())
        rows.append(
            {
                "pair": f"{backbones[i].name} | {backbones[j].name}",
                "relation": relation(backbones[i], backbones[j]),
                "instruct": _instruct_pattern(backbones[i], backbones[j]),
                "same_family": backbones[i].family == backbones[j].family,
                "low": min(accuracy[i], accuracy[j]),
                "high": max(accuracy[i], accuracy[j]),
                "phi": float(np.corrcoef(correct[:, i], correct[:, j])[0, 1]),
                "latent": latent_correlation(correct[:, i], correct[:, j], correct[:, others].sum(axis=1))
                if len(others) >= 3
                else math.nan,
                "same_wrong": coincidence(answers, correct, i, j) if (answers != "").any() else math.nan,
                "readable_excess": readable - independent if not empty.all() else math.nan,  # code: no answers
            }
        )
    return pd.DataFrame(rows)


def _instruct_pattern(first: Backbone, second: Backbone) -> str:
    flags = {first.instruct, second.instruct}
    if None in flags:
        return "unknown"
    return "mixed" if len(flags) == 2 else ("both instruct" if True in flags else "both base")


def matched_excess(pairs: pd.DataFrame) -> pd.DataFrame:
    """Each same-family pair's statistics minus the mean over different-family pairs of the same accuracies (lower
    and higher each within MATCH_WINDOW; else the three nearest), and the share of wrong answers the pair would
    have to share beyond its controls' coincidence: (same - control) / (1 - control)."""
    controls_all = pairs[pairs["relation"] == "different"]
    out = []
    for _, pair in pairs[pairs["relation"] != "different"].iterrows():
        distance = (controls_all["low"] - pair["low"]).abs().combine((controls_all["high"] - pair["high"]).abs(), max)
        controls = controls_all[distance <= MATCH_WINDOW]
        if len(controls) == 0:
            controls = controls_all.loc[distance.nsmallest(3).index]
        row = {key: pair[key] for key in ("pair", "relation", "instruct", "same_family")} | {"controls": len(controls)}
        for quantity in ("phi", "latent", "same_wrong", "readable_excess"):
            row[quantity] = pair[quantity] - controls[quantity].mean()
        control_same = controls["same_wrong"].mean()
        row["shared_wrong_share"] = (
            (pair["same_wrong"] - control_same) / (1 - control_same) if control_same < 1 else math.nan
        )  # two options (Winogrande): two wrong answers are always the same
        out.append(row)
    return pd.DataFrame(out)


def inheritance_fit(excess: pd.DataFrame) -> dict[str, object] | None:
    """The simulator's checkpoint model, fitted to the checkpoint pairs of known `instruct`: beyond the family's
    share (the matched excess of one family's pairs of other sizes, for pairs of one family), a pair shares
    W h_m h_n of its solve noise (latent) and Q h_m h_n of its wrong answers (shared_wrong_share), h = 1 for a base
    model and h_t for a tuned one. h_t by grid search, W and Q by least squares given h_t; each quantity alone and
    both together (each weighted by its variance), to see whether one h_t explains both."""
    pairs = excess[(excess["relation"] == "checkpoint") & (excess["instruct"] != "unknown")]
    family = excess[excess["relation"] == "family"]
    if len(pairs) < 3 or family.empty:
        return None
    tuned = pairs["instruct"].map({"both base": 0, "mixed": 1, "both instruct": 2}).to_numpy()
    targets = {
        quantity: (pairs[quantity] - family[quantity].mean() * pairs["same_family"]).to_numpy()
        for quantity in ("latent", "shared_wrong_share")
    }

    def fit(quantities: tuple[str, ...]) -> dict[str, float]:
        best: tuple[float, float] | None = None
        for h in np.linspace(0.01, 1, 100):
            g = h**tuned
            loss = sum(
                float(((y - (g @ y) / (g @ g) * g) ** 2).sum() / y.var()) for y in (targets[q] for q in quantities)
            )
            best = (loss, h) if best is None or loss < best[0] else best
        assert best is not None
        g = best[1] ** tuned
        return {"tuned_inheritance": round(best[1], 2)} | {
            f"{q}_share_of_base_pair": round(float((g @ targets[q]) / (g @ g)), 4) for q in quantities
        }

    return {
        "pairs": len(pairs),
        "by_pattern": pairs.groupby("instruct")["pair"].count().to_dict(),
        "family_share_removed": {q: round(float(family[q].mean()), 4) for q in targets},
        "latent": fit(("latent",)),
        "shared_wrong_share": fit(("shared_wrong_share",)),
        "both": fit(("latent", "shared_wrong_share")),
    }


def _mean_and_error(values: pd.Series) -> list[float] | None:
    """[mean, standard error, count] over pairs; None when no pair has the value."""
    values = values.dropna()
    if values.empty:
        return None
    error = float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan
    return [round(float(values.mean()), 4), round(error, 4), len(values)]


def family_effects(answers: np.ndarray, correct: np.ndarray, backbones: list[Backbone]) -> dict[str, object]:
    """Raw means by relation, and the accuracy-matched excess of same-family pairs by relation and instruct pattern."""
    pairs = pair_rows(answers, correct, backbones)
    quantities = ("phi", "latent", "same_wrong", "readable_excess")
    raw = {name: {q: _mean_and_error(group[q]) for q in quantities} for name, group in pairs.groupby("relation")}
    excess = matched_excess(pairs)
    if excess.empty:
        return {"raw_by_relation_mean_se_n": raw, "note": "no two backbones of one family"}
    by_relation = {
        name: {q: _mean_and_error(group[q]) for q in (*quantities, "shared_wrong_share")}
        for name, group in [("all same-family", excess), *excess.groupby("relation")]
    }
    by_instruct = {
        f"{relation_name}, {pattern}": {q: _mean_and_error(group[q]) for q in ("latent", "same_wrong")}
        for (relation_name, pattern), group in excess.groupby(["relation", "instruct"])
    }
    return {
        "pairs_by_relation": pairs["relation"].value_counts().to_dict(),
        "raw_by_relation_mean_se_n": raw,
        "matched_excess_by_relation_mean_se_n": by_relation,
        "matched_excess_by_instruct_mean_se_n": by_instruct,
        "checkpoint_inheritance_fit": inheritance_fit(excess),
        "matched_excess_per_pair": [
            {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
            for row in excess.to_dict("records")
        ],
    }


def main() -> None:
    if not SHARED.is_dir():
        raise SystemExit(f"{SHARED} is absent: these statistics are measured on its recordings")
    worlds: dict[str, dict[str, object]] = {}
    families: dict[str, dict[str, object]] = {}
    for world in FAMILY_WORLDS:
        answers_table, correct_table, _ = load(world)
        catalog = Catalog.load(SHARED / world / "models.yaml")
        backbones = [catalog[name] for name in answers_table.columns]
        families[world] = family_effects(answers_table.to_numpy(), correct_table.to_numpy(), backbones)
        print(world, json.dumps(families[world].get("matched_excess_by_relation_mean_se_n"))[:600], flush=True)
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
    report = {
        "command": "python benchmarks/studies/agreement_mechanisms.py",
        "worlds": worlds,
        "family": {
            "what": "same-family pairs against different-family ones: phi of errors; latent = correlation of the solve "
            "noise beyond difficulty (probit given the solvers among other families); same_wrong = P(same | both "
            "wrong, both answered); readable_excess = P(both readable | both wrong) minus its value if independent; "
            "shared_wrong_share = (same_wrong - control) / (1 - control). Matched: minus the mean over different-"
            f"family pairs whose lower and higher accuracies are each within {MATCH_WINDOW}. [mean, se, pairs]",
            "worlds": families,
        },
    }
    (RESULTS / "agreement_mechanisms.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
