"""Pareto front and k-medoids pools: exact dominance, every kept backbone in exactly one pool, tier order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.pooling import (
    AloneOnTraining,
    agreement,
    build_pools,
    cascade_estimate,
    complementary_backbones,
    dominance_matrix,
    pareto_front,
    pool_backbones,
)
from agentbalance.query import Query


def dominates(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Reference definition, written independently of the vectorised one."""
    no_worse = a[0] >= b[0] and a[1] <= b[1] and a[2] <= b[2]
    better = a[0] > b[0] or a[1] < b[1] or a[2] < b[2]
    return no_worse and better


# Small integer grids make ties and exact duplicates frequent.
points = st.lists(
    st.tuples(st.integers(0, 6), st.integers(1, 6), st.integers(1, 6)).map(lambda t: tuple(map(float, t))),
    min_size=1,
    max_size=25,
)


@given(points)
@settings(max_examples=300, deadline=None)
def test_no_kept_point_is_dominated_and_every_dropped_one_is_dominated_by_a_kept_one(pts: list) -> None:
    perf, tok, lat = (np.array(column) for column in zip(*pts, strict=True))
    kept = pareto_front(perf, tok, lat)
    for j, point in enumerate(pts):
        dominators = [i for i, other in enumerate(pts) if dominates(other, point)]
        if kept[j]:
            assert not dominators
        else:
            assert any(kept[i] for i in dominators)


@given(points)
@settings(max_examples=200, deadline=None)
def test_dominance_matrix_matches_the_definition(pts: list) -> None:
    perf, tok, lat = (np.array(column) for column in zip(*pts, strict=True))
    matrix = dominance_matrix(perf, tok, lat)
    expected = np.array([[dominates(a, b) for b in pts] for a in pts], dtype=bool).reshape(len(pts), len(pts))
    assert (matrix == expected).all()


def make_catalog(pts: list) -> Catalog:
    backbones = []
    for index, (perf, price, active) in enumerate(pts):
        backbones.append(
            Backbone(
                name=f"m{index}",
                family="test",
                reasoning=index % 3 == 0,
                params_active_b=active,
                params_total_b=active,
                price_in=price,
                price_out=price,
                scores={"mmlu": perf},
            )
        )
    return Catalog(backbones)


catalog_points = st.lists(
    st.tuples(st.integers(10, 90), st.integers(1, 40), st.integers(1, 80)).map(
        lambda t: (float(t[0]), t[1] / 10, float(t[2]))
    ),
    min_size=1,
    max_size=20,
)


@given(catalog_points, st.integers(1, 5), st.integers(0, 3))
@settings(max_examples=120, deadline=None)
def test_every_kept_backbone_is_in_exactly_one_pool(pts: list, k: int, seed: int) -> None:
    catalog = make_catalog(pts)
    triples = catalog.triples()
    kept_mask = pareto_front(triples["perf"], triples["tok_cost"], triples["lat"])
    distinct_profiles = len(triples.loc[kept_mask, ["perf", "tok_cost", "lat"]].drop_duplicates())
    if k > distinct_profiles:
        with pytest.raises(AgentBalanceError, match=f"cannot make {k} pools from {int(kept_mask.sum())} backbones"):
            build_pools(catalog, k=k, seed=seed)
        return
    result = build_pools(catalog, k=k, seed=seed)
    members = [name for pool in result.pools for name in pool]
    assert sorted(members) == sorted(result.kept)
    assert len(result.pools) == k and all(result.pools)
    assert set(result.dominated_by) == set(catalog.names) - set(result.kept)
    for dropped, by in result.dominated_by.items():
        assert by and any(name in result.kept for name in by), dropped
    for index, medoid in enumerate(result.medoids):
        assert medoid in result.pools[index]


def test_duplicates_are_both_kept_and_share_a_pool() -> None:
    # m0 and m3 are reasoning backbones (make_catalog marks every third one); m1 and m2 are identical
    catalog = make_catalog([(70.0, 3.0, 30.0), (50.0, 1.0, 8.0), (50.0, 1.0, 8.0), (40.0, 2.0, 30.0)])
    with pytest.raises(AgentBalanceError, match=r"cannot make 3 pools from 3 backbones .*\(2 distinct profiles\)"):
        build_pools(catalog, k=3)
    result = build_pools(catalog, k=2)
    assert result.kept == ["m0", "m1", "m2"]
    assert result.dominated_by == {"m3": ["m1", "m2"]}
    assert result.pool_of("m1") == result.pool_of("m2") == 0
    assert result.pool_of("m0") == 1


def test_pools_are_ordered_cheapest_tier_first_and_deterministic() -> None:
    catalog = Catalog.load()
    first = build_pools(catalog, seed=0)
    again = build_pools(catalog, seed=0)
    assert first.pools == again.pools and first.medoids == again.medoids
    costs = first.triples["tok_cost"]
    tiers = [float(np.log(costs[pool]).mean()) for pool in first.pools]
    assert tiers == sorted(tiers)
    for pool in first.pools:
        assert list(costs[pool]) == sorted(costs[pool])


def test_default_pool_count_is_four_and_capped_by_the_survivors() -> None:
    assert len(build_pools(Catalog.load()).pools) == 4
    tiny = make_catalog([(50.0, 1.0, 8.0), (70.0, 3.0, 30.0)])
    assert len(build_pools(tiny).pools) == 2


def test_explicit_k_above_the_survivors_or_below_one_is_an_error() -> None:
    tiny = make_catalog([(50.0, 1.0, 8.0), (70.0, 3.0, 30.0)])
    with pytest.raises(AgentBalanceError, match="cannot make 3 pools from 2 backbones"):
        build_pools(tiny, k=3)
    with pytest.raises(AgentBalanceError, match="at least 1"):
        build_pools(tiny, k=0)


def test_shipped_catalog_drops_qwen25_72b_as_in_the_paper() -> None:
    result = build_pools(Catalog.load())
    assert "qwen2.5-72b-instruct" in result.dominated_by


def test_pool_backbones_groups_clear_clusters_together() -> None:
    triples = pd.DataFrame(
        {
            "perf": [30, 31, 32, 60, 61, 62, 85, 86],
            "tok_cost": [0.01, 0.011, 0.012, 0.1, 0.11, 0.12, 1.0, 1.1],
            "lat": [1, 1.1, 1.2, 5, 5.5, 6, 30, 33],
        },
        index=[f"b{i}" for i in range(8)],
    )
    pools, medoids = pool_backbones(triples, k=3, seed=0)
    assert pools == [["b0", "b1", "b2"], ["b3", "b4", "b5"], ["b6", "b7"]]
    assert medoids[0] == "b1" and medoids[1] == "b4"


def _alone(right: range | list[int], cost: float, wrong_answer: str, questions: int = 400) -> AloneOnTraining:
    """A backbone right on the questions in `right` ("A") and answering `wrong_answer`-<index> elsewhere."""
    correct = np.isin(np.arange(questions), list(right))
    answers = ["A" if ok else f"{wrong_answer}-{i}" for i, ok in enumerate(correct)]
    return AloneOnTraining(answers, correct, np.full(questions, cost), np.ones(questions))


def _same(query: Query, first: str, second: str) -> bool:
    return first == second


def test_a_dominated_backbone_with_complementary_errors_is_pooled_and_a_correlated_twin_is_not() -> None:
    questions = [Query(id=f"q{i}", question="?") for i in range(400)]
    cheap = _alone(range(300), 1.0, "x")  # 75%
    strong = _alone(range(340), 10.0, "s")  # 85%, ten times the cost
    complement = _alone([*range(280), *range(300, 320)], 1.5, "y")  # 75% too, but wrong elsewhere and differently
    twin = _alone(range(300), 1.5, "x")  # the cheap one's errors, answer for answer
    alone = {"cheap": cheap, "strong": strong, "complement": complement, "twin": twin}
    # cheap + complement -> strong: they agree (and are right) on 70%, strong answers the rest: 85% at cost 5.5
    perf, cost, _ = cascade_estimate(cheap, complement, strong, agreement(cheap, complement, questions, _same))
    assert perf == pytest.approx(0.85) and cost == pytest.approx(2.5 + 0.3 * 10)
    assert complementary_backbones(alone, ["cheap", "strong"], questions, _same) == ["complement"]


def test_two_dominated_backbones_that_pay_only_together_are_both_pooled() -> None:
    questions = [Query(id=f"q{i}", question="?") for i in range(400)]
    alone = {
        "strong": _alone(range(280), 1.0, "s"),  # 70%, kept
        "cheap": _alone([*range(100), *range(200, 260)], 0.1, "c"),  # 40%, kept
        "y": _alone(range(200), 2.0, "y"),  # 50%: right only where strong is too
        "x": _alone(range(200, 360), 2.0, "x"),  # 40%: right where strong and y disagree
    }
    # strong + y -> x: they agree (and are right) on 50%, x is right on 40% of the rest: 90% at cost 4
    perf, _, _ = cascade_estimate(
        alone["strong"], alone["y"], alone["x"], agreement(alone["strong"], alone["y"], questions, _same)
    )
    assert perf == pytest.approx(0.9)
    # with the kept backbones, neither x nor y alone lifts the frontier (at most strong's 70% at its cost)
    assert (
        complementary_backbones({k: v for k, v in alone.items() if k != "y"}, ["strong", "cheap"], questions, _same)
        == []
    )
    assert (
        complementary_backbones({k: v for k, v in alone.items() if k != "x"}, ["strong", "cheap"], questions, _same)
        == []
    )
    assert complementary_backbones(alone, ["strong", "cheap"], questions, _same) == ["x", "y"]


def test_complements_join_the_pools_and_are_reported() -> None:
    catalog = make_catalog([(70.0, 3.0, 30.0), (50.0, 1.0, 8.0), (40.0, 2.0, 30.0)])
    plain = build_pools(catalog, k=2)
    assert "m2" not in plain.kept
    result = build_pools(catalog, k=2, complements=["m2"])
    assert "m2" in result.kept and result.complements == ["m2"]
    result.pool_of("m2")  # in a pool
    report = result.to_json()
    assert report["complements"] == ["m2"] and all(row["name"] != "m2" for row in report["dropped"])
    with pytest.raises(AgentBalanceError, match="not backbones of the catalog"):
        build_pools(catalog, complements=["no-such"])


def test_an_experiment_pools_complements_only_from_dominated_backbones_and_only_when_asked(tmp_path) -> None:
    """In a replay world the training split decides the complements; `complements=False` keeps the paper's
    Pareto pools."""
    from agentbalance.experiment import Experiment, ExperimentSpec
    from tests.test_replay_world import mcq_tables, write_world

    folder = write_world(tmp_path / "world", *mcq_tables())
    world = f"replay:{folder}"
    plain = Experiment.open(ExperimentSpec(world=world, sizes=(10, 5, 5), complements=False)).pools
    pooled = Experiment.open(ExperimentSpec(world=world, sizes=(10, 5, 5))).pools
    assert plain.complements == [] and set(pooled.complements) <= set(plain.dominated_by)
    assert set(pooled.kept) == set(plain.kept) | set(pooled.complements)
