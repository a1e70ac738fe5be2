"""Paper §3.1.1: keep the 3-D Pareto-optimal backbones and group them into cost-tier pools by k-medoids.

Pure functions of the triples (Perf, TokCost, Lat): no LLM calls, no randomness beyond the given seed.
Beyond the paper, a dominated backbone may join the pools as a *complement* (`complementary_backbones`):
its errors differ from the others', so an agreement cascade with it pays although it loses alone.
k-medoids comes from the maintained `kmedoids` package (FasterPAM), not scikit-learn-extra, whose
KMedoids is unmaintained and whose wheel does not import with numpy 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kmedoids
import numpy as np
import pandas as pd

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query, SameAnswer

DEFAULT_POOL_COUNT = 4


def dominance_matrix(perf: np.ndarray, tok_cost: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """D[i, j] is True when backbone i dominates j: no worse on all three objectives, better on one.

    Perf is maximised, TokCost and Lat minimised. Identical points do not dominate each other.
    """
    costs = np.stack([-np.asarray(perf, float), np.asarray(tok_cost, float), np.asarray(lat, float)], axis=1)
    no_worse = (costs[:, None, :] <= costs[None, :, :]).all(axis=2)
    better = (costs[:, None, :] < costs[None, :, :]).any(axis=2)
    return no_worse & better


def pareto_front(perf: np.ndarray, tok_cost: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated points (exact, O(n^2) vectorised)."""
    return ~dominance_matrix(perf, tok_cost, lat).any(axis=0)


def pool_features(triples: pd.DataFrame) -> np.ndarray:
    """phi(m) = [Perf, log TokCost, log Lat], each column standardised (a constant column stays 0)."""
    raw = np.stack(
        [
            triples["perf"].to_numpy(float),
            np.log(np.maximum(triples["tok_cost"].to_numpy(float), 1e-12)),
            np.log(np.maximum(triples["lat"].to_numpy(float), 1e-12)),
        ],
        axis=1,
    )
    spread = raw.std(axis=0)
    return (raw - raw.mean(axis=0)) / np.where(spread > 0, spread, 1.0)


@dataclass(frozen=True)
class PoolingResult:
    """Which backbones survive the Pareto filter, who dominates the others, and the ordered pools."""

    triples: pd.DataFrame  # every backbone: perf, tok_cost, lat, reasoning, kept, pool (-1 if dropped)
    benchmarks: list[str]
    kept: list[str]
    dominated_by: dict[str, list[str]]  # dropped backbone -> every backbone that dominates it
    pools: list[list[str]]  # cheapest tier first; members by increasing TokCost
    medoids: list[str]  # one per pool, same order
    complements: list[str] = dataclasses.field(default_factory=list)  # dominated, but kept for their cascades

    def pool_of(self, name: str) -> int:
        for index, members in enumerate(self.pools):
            if name in members:
                return index
        raise AgentBalanceError(f"backbone {name!r} is in no pool (dropped by the Pareto filter or unknown)")

    def to_json(self) -> dict[str, Any]:
        """The public JSON form printed by `agentbalance pools --json`."""
        return {
            "benchmarks": self.benchmarks,
            "kept": self.kept,
            "dropped": [
                {"name": name, "dominated_by": by}
                for name, by in self.dominated_by.items()
                if name not in self.complements
            ],
            "complements": self.complements,
            "pools": self.pools,
            "medoids": self.medoids,
            "backbones": [
                {
                    "name": name,
                    "perf": round(float(row.perf), 4),
                    "tok_cost": float(row.tok_cost),
                    "lat": round(float(row.lat), 4),
                    "reasoning": bool(row.reasoning),
                    "kept": bool(row.kept),
                    "pool": int(row.pool),
                }
                for name, row in self.triples.iterrows()
            ],
        }


def pool_backbones(triples: pd.DataFrame, k: int | None = None, seed: int = 0) -> tuple[list[list[str]], list[str]]:
    """k-medoids over phi(m) of already Pareto-filtered backbones; pools ordered by cost tier.

    Backbones with identical triples always share a pool, so k counts distinct profiles: `k=None`
    means DEFAULT_POOL_COUNT capped by that count, and an explicit k above it is an error.
    Tier order: mean log TokCost of a pool's members, then mean log Lat.
    """
    count = len(triples)
    if count == 0:
        raise AgentBalanceError("no backbone to pool")
    features = pool_features(triples)
    distinct, profile_of = np.unique(features, axis=0, return_inverse=True)
    profile_of = profile_of.reshape(-1)
    distinct_count = len(distinct)
    if k is None:
        k = min(DEFAULT_POOL_COUNT, distinct_count)
    if k < 1:
        raise AgentBalanceError(f"the number of pools must be at least 1, got {k}")
    if k > distinct_count:
        identical = f" ({distinct_count} distinct profiles)" if distinct_count < count else ""
        raise AgentBalanceError(
            f"cannot make {k} pools from {count} backbones kept by the Pareto filter{identical}: "
            f"{distinct_count} at most"
        )
    names = list(triples.index)
    if k == distinct_count:
        profile_labels, medoid_profiles = np.arange(k), np.arange(k)
    else:
        fitted = kmedoids.KMedoids(
            n_clusters=k, metric="euclidean", method="fasterpam", init="build", random_state=seed
        ).fit(distinct)
        profile_labels, medoid_profiles = np.asarray(fitted.labels_), np.asarray(fitted.medoid_indices_)
    labels = profile_labels[profile_of]
    # the medoid backbone of each pool: the first backbone whose profile is the medoid profile
    medoid_rows = np.array([int(np.flatnonzero(profile_of == profile)[0]) for profile in medoid_profiles])
    log_tok = np.log(np.maximum(triples["tok_cost"].to_numpy(float), 1e-12))
    log_lat = np.log(np.maximum(triples["lat"].to_numpy(float), 1e-12))

    def tier(label: int) -> tuple[float, float]:
        members = labels == label
        return float(log_tok[members].mean()), float(log_lat[members].mean())

    order = sorted(range(k), key=tier)
    pools = []
    for label in order:
        rows = sorted(np.flatnonzero(labels == label), key=lambda row: (log_tok[row], log_lat[row], names[row]))
        pools.append([names[row] for row in rows])
    medoids = [names[int(medoid_rows[label])] for label in order]
    return pools, medoids


def build_pools(
    catalog: Catalog,
    k: int | None = None,
    seed: int = 0,
    benchmarks: Sequence[str] | None = None,
    complements: Sequence[str] = (),
) -> PoolingResult:
    """Pareto-filter the catalog on its derived triples, then pool the survivors by k-medoids; `complements`
    (dominated backbones chosen by `complementary_backbones`) are pooled with the survivors."""
    used = catalog.resolve_benchmarks(benchmarks)
    triples = catalog.triples(used)
    dominance = dominance_matrix(triples["perf"], triples["tok_cost"], triples["lat"])
    names = list(triples.index)
    unknown = sorted(set(complements) - set(names))
    if unknown:
        raise AgentBalanceError(f"{catalog.source}: complements {unknown} are not backbones of the catalog")
    kept_mask = ~dominance.any(axis=0) | np.isin(names, list(complements))
    kept = [name for name, keep in zip(names, kept_mask, strict=True) if keep]
    dominated_by = {
        names[j]: [names[i] for i in np.flatnonzero(dominance[:, j])] for j in np.flatnonzero(dominance.any(axis=0))
    }
    pools, medoids = pool_backbones(triples.loc[kept], k=k, seed=seed)
    pool_index = {name: index for index, members in enumerate(pools) for name in members}
    triples = triples.assign(kept=kept_mask, pool=[pool_index.get(name, -1) for name in names])
    ordered = [name for name in names if name in set(complements)]
    return PoolingResult(triples, used, kept, dominated_by, pools, medoids, ordered)


@dataclass(frozen=True)
class AloneOnTraining:
    """One backbone alone on each training question: its answer, its quality score, its cost and latency."""

    answers: Sequence[str | None]
    score: np.ndarray  # [N] in [0, 1] (right/wrong: 1 or 0; ungraded: 0)
    cost: np.ndarray  # [N] USD
    latency: np.ndarray  # [N] seconds


def agreement(
    first: AloneOnTraining, second: AloneOnTraining, questions: Sequence[Query], same: SameAnswer
) -> np.ndarray:
    """[N] bool: where both backbones gave an answer and it is one answer (the condition of a cascade)."""
    pairs = zip(questions, first.answers, second.answers, strict=True)
    return np.array([a is not None and b is not None and same(q, a, b) for q, a, b in pairs], dtype=bool)


def cascade_estimate(
    first: AloneOnTraining, second: AloneOnTraining, escalation: AloneOnTraining, agree: np.ndarray
) -> tuple[float, float, float]:
    """(Perf, mean cost, mean latency) of the cascade first + second -> escalation, estimated from the three
    backbones alone and the answerers' `agreement`: where the two agree their answer stands, else the
    escalation's does. It ignores how a note or a role changes an answer; it only decides which backbones
    are worth pooling."""
    score = np.where(agree, first.score, escalation.score)
    cost = first.cost + second.cost + np.where(agree, 0.0, escalation.cost)
    latency = np.maximum(first.latency, second.latency) + np.where(agree, 0.0, escalation.latency)
    return float(score.mean()), float(cost.mean()), float(latency.mean())


def complementary_backbones(
    alone: Mapping[str, AloneOnTraining],
    kept: Sequence[str],
    questions: Sequence[Query],
    same: SameAnswer,
    z: float = 1.0,
) -> list[str]:
    """The dominated backbones (in `alone`, not in `kept`) worth pooling for their cascades, chosen greedily
    on the training questions: each round takes the single or agreement cascade, over the backbones chosen so
    far and the dominated ones, that lifts the Perf-TokCost frontier of the chosen backbones' singles and
    cascades by the most, if by more than `z` standard errors of Perf, and pools its dominated members.

    A cascade may need two dominated backbones at once: on mmlu-pro-dev DeepSeek-Coder-V2 and a 70B Llama
    beside gemini-1.5-flash-002 lift the frontier by 2 to 3 points, while either one with the kept backbones
    lifts it by about one standard error, so a rule that adds one backbone at a time misses both."""
    agreements: dict[tuple[str, str], np.ndarray] = {}  # per answerer pair: each is met by many escalations
    points: dict[tuple[str, ...], tuple[float, float]] = {}  # (Perf, cost) of each system, measured once
    margins: dict[tuple[str, ...], float] = {}  # `z` standard errors of each system's Perf

    def point(mas: tuple[str, ...]) -> tuple[float, float]:
        if mas not in points:
            if len(mas) == 1:
                run = alone[mas[0]]
                points[mas] = float(run.score.mean()), float(run.cost.mean())
            else:
                first, second, escalation = mas
                if (first, second) not in agreements:
                    agreements[(first, second)] = agreement(alone[first], alone[second], questions, same)
                perf, cost, _ = cascade_estimate(
                    alone[first], alone[second], alone[escalation], agreements[(first, second)]
                )
                points[mas] = perf, cost
            perf = points[mas][0]  # p (1 - p) bounds the variance of any score in [0, 1] with mean p
            margins[mas] = z * float(np.sqrt(max(perf * (1 - perf), 1e-12) / max(len(questions), 1)))
        return points[mas]

    def systems(names: Sequence[str]) -> list[tuple[str, ...]]:
        """Every backbone alone and every cascade (a pair answering, a third escalated to) over `names`."""
        return [(a,) for a in names] + [
            (a, b, c) for i, a in enumerate(names) for b in names[i + 1 :] for c in names if c not in (a, b)
        ]

    chosen = [name for name in kept if name in alone]
    candidates = sorted(name for name in alone if name not in chosen)
    frontier = Staircase([point(mas) for mas in systems(chosen)])
    everything = systems([*chosen, *candidates])
    complements: list[str] = []
    while candidates:
        best_lift, best_mas = 0.0, None
        for mas in everything:
            if all(name in chosen for name in mas):
                continue
            perf, cost = point(mas)
            lift = perf - frontier.best_within(cost) - margins[mas]
            if lift > best_lift:
                best_lift, best_mas = lift, mas
        if best_mas is None:
            break
        joining = sorted({name for name in best_mas if name not in chosen})
        complements += joining
        chosen += joining
        candidates = [name for name in candidates if name not in joining]
        frontier = Staircase([point(mas) for mas in systems(chosen)])
    return complements


class Staircase:
    """The best Perf at each cost among measured (Perf, cost) points, answered by bisection."""

    def __init__(self, points: Sequence[tuple[float, float]]) -> None:
        ordered = sorted(points, key=lambda p: p[1])
        self.costs = np.array([cost for _, cost in ordered])
        self.best = np.maximum.accumulate(np.array([perf for perf, _ in ordered])) if ordered else np.array([])

    def best_within(self, cost: float) -> float:
        """The highest Perf of a point that costs at most `cost` (0 when none does)."""
        index = int(np.searchsorted(self.costs, cost, side="right"))
        return float(self.best[index - 1]) if index > 0 else 0.0


def random_pools(result: PoolingResult, seed: int) -> PoolingResult:
    """The ablation "random pools": the kept backbones dealt at random into pools of the same sizes as
    the k-medoids ones, pools still ordered by cost tier (mean log TokCost), so only the grouping changes."""
    generator = np.random.default_rng(seed)
    shuffled = [result.kept[i] for i in generator.permutation(len(result.kept))]
    sizes = [len(pool) for pool in result.pools]
    groups, start = [], 0
    for size in sizes:
        groups.append(shuffled[start : start + size])
        start += size
    log_tok = np.log(np.maximum(result.triples["tok_cost"].astype(float), 1e-12))
    groups.sort(key=lambda group: float(log_tok.loc[group].mean()))
    pools = [sorted(group, key=lambda name: float(log_tok.loc[name])) for group in groups]
    pool_index = {name: index for index, members in enumerate(pools) for name in members}
    triples = result.triples.assign(pool=[pool_index.get(name, -1) for name in result.triples.index])
    return dataclasses.replace(result, triples=triples, pools=pools, medoids=[pool[0] for pool in pools])
