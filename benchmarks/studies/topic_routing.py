"""Could routing queries by topic between the strongest backbones beat the best single backbone on test?

Issue #19 asks agentbalance's best point on mmlu-pro-dev to be above the best single backbone, and its
`gain_log_tok` to be above zero; both compare with the backbone best *on the test questions*. Backbones that
are close overall can differ by topic (on MMLU-Pro DeepSeek-Coder-V2 leads gemini-1.5-flash-002 on computer
science, gemini leads on biology), and the controller sees each query's sentence embedding, so a per-topic
choice is within what it can represent. This script measures what such a choice is worth before anyone builds
it: per world and seed (the splits of `curve`: 600 training, 200 validation, 400 test questions), with
nothing trained and every choice made on the training and validation questions,

* `honest_single`: the backbone best on training and validation, scored on test;
* `oracle_single`: the backbone best on test (what the targets compare with);
* `by_domain`: each of the world's domain labels answered by whichever of the two backbones best on training
  and validation is better on that domain's training and validation questions (labels the controller does
  not see: an upper reference for topic routing; worlds with one label equal `honest_single`);
* `by_cluster_K`: the same with K clusters of the sentence embeddings (k-means on the training and
  validation questions, each test question in its nearest cluster): topic routing from the controller's input;
* `guarded_cluster_K`: `by_cluster_K` only where it pays on the known questions themselves (5-fold
  cross-validation: clusters and choices fitted on four fifths, judged on the fifth; its mean lift over the
  better candidate alone above one standard error), else `honest_single`: a rule a build could apply;
* `per_question_best_of_two`: the better of the two on every test question (a ceiling no router reaches).

Accuracy on test × 100 at the loosest budget (both backbones fit), mean over seeds; seeds 0-9 by default
(the six worlds took about 7 minutes on 2 cores, most of it opening each world and seed as `curve` does).
Worlds absent from the data folder are skipped.
Run: .venv/bin/python benchmarks/studies/topic_routing.py   (writes benchmarks/studies/results/topic_routing.json)
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
from dev_worlds import REPLAY_WORLDS, RESULTS, sweep, sweep_arguments
from scipy.cluster.vq import kmeans2

from agentbalance.experiment import Experiment
from agentbalance.query import Query
from agentbalance.templates import single_mas

CLUSTERS = (4, 11)  # 11: as many as mmlu-pro-dev's domain labels
ROUTED = 2  # topic routing chooses between the two backbones best on training and validation
FOLDS = 5  # the guard's cross-validation on the known questions


def correctness(experiment: Experiment, backbones: Sequence[str], queries: Sequence[Query]) -> np.ndarray:
    """[queries, backbones] the score of the backbone alone on the query (1.0 right, 0.0 wrong or ungraded)."""
    columns = []
    for backbone in backbones:
        mas = single_mas(experiment.roles, backbone)
        outcomes = experiment.execute([(mas, query) for query in queries])
        columns.append([0.0 if outcome.score is None else outcome.score for outcome in outcomes])
    return np.array(columns).T


def routed(known: np.ndarray, test: np.ndarray, known_groups: np.ndarray, test_groups: np.ndarray) -> np.ndarray:
    """Per test question, right (1.0) or not when each group's questions go to the candidate best on that group's
    known questions (the candidate best overall where a group has no known question). Columns are the candidates."""
    overall = int(known.mean(axis=0).argmax())
    chosen = np.full(len(test), overall)
    for group in np.unique(test_groups):
        members = known_groups == group
        if members.any():
            chosen[test_groups == group] = int(known[members].mean(axis=0).argmax())
    return test[np.arange(len(test)), chosen]


def clusters_of(known: np.ndarray, test: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """k-means labels of the known embeddings, and each test embedding's nearest centroid."""
    centroids, known_labels = kmeans2(known, k, minit="++", seed=seed)
    distances = ((test[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    return known_labels, distances.argmin(axis=1)


def cross_validated_lift(known: np.ndarray, embeddings: np.ndarray, k: int, seed: int) -> tuple[float, float]:
    """What routing by k clusters adds to the better candidate alone, judged on the known questions only: FOLDS-fold,
    each fold answered by clusters and choices fitted on the others. Mean per-question lift and its standard error."""
    order = np.random.default_rng(seed).permutation(len(known))
    lift = np.empty(len(known))
    for held in np.array_split(order, FOLDS):
        fitted = np.setdiff1d(order, held)
        fitted_labels, held_labels = clusters_of(embeddings[fitted], embeddings[held], k, seed)
        alone = known[held, int(known[fitted].mean(axis=0).argmax())]
        lift[held] = routed(known[fitted], known[held], fitted_labels, held_labels) - alone
    return float(lift.mean()), float(lift.std(ddof=1) / np.sqrt(len(lift)))


def routing_of(experiment: Experiment, seed: int) -> dict[str, object]:
    """One world and seed: every measure of the module docstring (test accuracy × 100)."""
    splits = experiment.splits
    known_queries = [*splits.train, *splits.val]
    backbones = [backbone.name for backbone in experiment.catalogs.described]
    known = correctness(experiment, backbones, known_queries)
    test = correctness(experiment, backbones, splits.test)
    ranked = np.argsort(-known.mean(axis=0), kind="stable")
    top = ranked[:ROUTED]
    row: dict[str, object] = {
        "candidates": [backbones[i] for i in top],
        "honest_single": 100 * float(test[:, ranked[0]].mean()),
        "oracle_single": 100 * float(test.mean(axis=0).max()),
        "oracle_backbone": backbones[int(test.mean(axis=0).argmax())],
        "by_domain": 100
        * float(
            routed(
                known[:, top],
                test[:, top],
                np.array([q.domain or "" for q in known_queries]),
                np.array([q.domain or "" for q in splits.test]),
            ).mean()
        ),
        "per_question_best_of_two": 100 * float(test[:, top].max(axis=1).mean()),
    }
    known_embeddings = experiment.embed(known_queries).numpy().astype(np.float64)
    test_embeddings = experiment.embed(splits.test).numpy().astype(np.float64)
    for k in CLUSTERS:
        known_labels, test_labels = clusters_of(known_embeddings, test_embeddings, k, seed)
        by_cluster = 100 * float(routed(known[:, top], test[:, top], known_labels, test_labels).mean())
        lift, error = cross_validated_lift(known[:, top], known_embeddings, k, seed)
        row[f"by_cluster_{k}"] = by_cluster
        row[f"by_cluster_{k}_cross_validated_lift"] = 100 * lift
        row[f"guarded_cluster_{k}"] = by_cluster if lift > error else row["honest_single"]
    return {key: round(value, 2) if isinstance(value, float) else value for key, value in row.items()}


MEASURES = (
    "honest_single",
    "oracle_single",
    "by_domain",
    *(f"by_cluster_{k}" for k in CLUSTERS),
    *(f"guarded_cluster_{k}" for k in CLUSTERS),
)


def summary(runs: dict[str, dict[str, object]]) -> dict[str, object]:
    """Each measure's seed mean, and each router's mean difference from the oracle and the honest single."""

    def values(measure: str) -> np.ndarray:
        return np.array([float(run[measure]) for run in runs.values()])  # type: ignore[arg-type]

    out: dict[str, object] = {m: round(float(values(m).mean()), 2) for m in (*MEASURES, "per_question_best_of_two")}
    for router in MEASURES[2:]:
        gain = values(router) - values("honest_single")
        out[f"{router}_minus_honest_single"] = round(float(gain.mean()), 2)
        error = float(gain.std(ddof=1) / np.sqrt(len(gain))) if len(gain) > 1 else None  # one seed: no spread
        out[f"{router}_minus_honest_single_standard_error"] = None if error is None else round(error, 2)
        out[f"{router}_minus_oracle_single"] = round(float((values(router) - values("oracle_single")).mean()), 2)
    return out


def main() -> None:
    args = sweep_arguments(__doc__, REPLAY_WORLDS, "0,1,2,3,4,5,6,7,8,9")
    worlds: dict[str, object] = {}
    for world, experiments in sweep(args):
        runs = {str(seed): routing_of(experiment, seed) for seed, experiment in experiments}
        worlds[world] = {"summary": summary(runs), "seeds": runs}
        print(world, json.dumps(worlds[world]["summary"]))  # type: ignore[index]
    command = f"python benchmarks/studies/topic_routing.py --worlds {args.worlds} --seeds {args.seeds}"
    (RESULTS / "topic_routing.json").write_text(json.dumps({"command": command, "worlds": worlds}, indent=2) + "\n")


if __name__ == "__main__":
    main()
