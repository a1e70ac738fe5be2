"""Difficulty labels from gold: the fraction of pool backbones that solve an item alone, to pretrain and report on.

It must never reach inference: the labels read gold answers, so they only train the difficulty head and
score it (Spearman), and nothing here is saved with the controller.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from agentbalance.mas import MAS
from agentbalance.policy.difficulty import pretrain_difficulty
from agentbalance.query import Query
from agentbalance.runtime.rollout import Outcome
from agentbalance.train.training_run import TrainingRun


def solve_rates(run: TrainingRun, queries: Sequence[Query]) -> list[float]:
    """The fraction of the pool backbones that solve each item alone (gold is used: training and
    reporting only, never at inference)."""
    decision = run.experiment.roles.decision
    names = run.controller.context.backbone_names
    singles = [MAS.single(decision.name, n) for n in names]
    outcomes = run.execute([(single, query) for query in queries for single in singles])
    return [solve_rate(outcomes[i * len(names) : (i + 1) * len(names)]) for i in range(len(queries))]


def pretrain(run: TrainingRun, queries: Sequence[Query]) -> float:
    """Label each training item by the fraction of the pool backbones that solve it alone, and fit the
    controller's difficulty head to 1 - that fraction; returns the last loss."""
    rates = torch.tensor(solve_rates(run, queries), dtype=torch.float32)
    return pretrain_difficulty(run.controller.difficulty, run.embed(queries), rates, run.config.pretrain_steps)


def difficulty_quality(run: TrainingRun, queries: Sequence[Query]) -> dict[str, object]:
    """Spearman rank correlation of the estimated difficulty with the true one (1 - solve rate),
    overall and per domain label (the domain is used for this report only)."""
    with torch.no_grad():
        predicted = run.controller.difficulty(run.embed(queries)).numpy()
    truth = 1.0 - np.array(solve_rates(run, queries))
    domains = sorted({q.domain or "unlabelled" for q in queries})
    per_domain = {}
    for domain in domains:
        rows = np.array([(q.domain or "unlabelled") == domain for q in queries])
        per_domain[domain] = {"n": int(rows.sum()), "spearman": spearman(predicted[rows], truth[rows])}
    return {"n": len(queries), "spearman": spearman(predicted, truth), "per_domain": per_domain}


def solve_rate(outcomes: Sequence[Outcome]) -> float:
    """The mean score of the graded runs: on right/wrong tasks the fraction that are right (0.5, no information,
    when none could be graded)."""
    graded = [o.score for o in outcomes if o.score is not None]
    return sum(graded) / len(graded) if graded else 0.5


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Rank correlation (average ranks for ties); None when either side is constant or too short."""
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    import pandas as pd

    return float(pd.Series(a).rank().corr(pd.Series(b).rank()))
