"""The paper's Table 3 variants and the two stages beyond it switched off: each replaces exactly one learned
stage and still builds valid MAS."""

from __future__ import annotations

import pytest
import torch

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.methods import load_method, parse_methods
from agentbalance.mas import MAS
from agentbalance.policy.controller import ABLATIONS, Controller, ControllerConfig
from agentbalance.pooling import build_pools, random_pools
from tests.test_controller import EMBED, tiny_context

BATCH = 64


def ablated(ablation: str | None) -> Controller:
    torch.manual_seed(0)
    return Controller(tiny_context(roles=4, pools=(0, 0, 1, 1)), ControllerConfig(EMBED, 8, ablation=ablation))


def constructed(controller: Controller) -> list[MAS]:
    torch.manual_seed(1)
    return controller.construct(torch.randn(BATCH, EMBED))


@pytest.mark.parametrize("ablation", [a for a in ABLATIONS if a != "random-pools"])
def test_every_variant_builds_valid_mas_with_an_exact_log_probability(ablation: str) -> None:
    controller = ablated(ablation)
    for mas in constructed(controller):
        MAS(mas.agents, mas.edges, mas.decision)  # full validation
    embeddings = torch.randn(8, EMBED)
    step = controller(embeddings, mode="sample", generator=torch.Generator().manual_seed(2))
    rescored = controller(embeddings, mode="given", given=step.decisions)
    assert torch.allclose(step.log_prob, rescored.log_prob)


def test_no_gating_keeps_every_agent_and_dense_topology_wires_every_forward_edge() -> None:
    assert all(len(mas) == 4 for mas in constructed(ablated("no-gating")))
    for mas in constructed(ablated("dense-topology")):
        ids = list(mas.topological_order())
        expected = {(ids[i], ids[j]) for j in range(len(ids)) for i in range(j)}
        assert set(mas.edges) == expected


def test_one_pool_keeps_every_agent_in_the_query_pool_and_no_escalation_makes_no_conditional_agent() -> None:
    def sampled(ablation: str | None) -> list[MAS]:
        controller = ablated(ablation)
        with torch.no_grad():
            step = controller(torch.randn(400, EMBED), mode="sample", generator=torch.Generator().manual_seed(5))
        return controller.to_masses(step.decisions)

    pool_of = {"m0": 0, "m1": 0, "m2": 1, "m3": 1}
    mixed = [m for m in sampled(None) if len({pool_of[a.backbone] for a in m.agents}) > 1]
    assert mixed and any(m.conditional for m in sampled(None)), "the full controller samples both"
    assert all({pool_of[a.backbone] for a in m.agents} == {m.pool} for m in sampled("one-pool"))
    assert not any(m.conditional for m in sampled("no-escalation"))


def test_random_selection_and_matching_stay_random_at_deployment() -> None:
    """Greedy construction of one query, many times: the same MAS each time, except where an ablation
    made a stage random."""
    torch.manual_seed(1)
    one_query = torch.randn(1, EMBED).expand(BATCH, -1)

    def built(ablation: str | None) -> list[MAS]:
        torch.manual_seed(2)
        return ablated(ablation).construct(one_query)

    assert len({mas.pool for mas in built(None)}) == 1
    assert len({tuple(a.backbone for a in mas.agents) for mas in built(None)}) == 1
    assert {mas.pool for mas in built("random-selection")} == {0, 1}
    decision_backbones = {mas.agents[-1].backbone for mas in built("random-matching")}
    assert len({mas.pool for mas in built("random-matching")}) == 1 and len(decision_backbones) == 2


def test_role_only_representation_ignores_query_and_backbones() -> None:
    controller = ablated("role-only")
    agents = controller.representation.roles_only(controller.context.role_embeddings, 3)
    assert torch.equal(agents[0], agents[2])


def test_random_pools_keep_the_kept_backbones_and_the_pool_sizes() -> None:
    real = build_pools(Catalog.load())
    shuffled = random_pools(real, seed=3)
    assert sorted(map(len, shuffled.pools)) == sorted(map(len, real.pools))
    assert sorted(name for pool in shuffled.pools for name in pool) == sorted(real.kept)
    assert shuffled.pools != real.pools
    assert random_pools(real, seed=3).pools == shuffled.pools


def test_ablation_names_are_checked_and_selectable() -> None:
    with pytest.raises(AgentBalanceError, match="unknown ablation"):
        ControllerConfig(ablation="no-brain")
    assert parse_methods("ablations") == ["agentbalance", *(f"agentbalance-{a}" for a in ABLATIONS)]
    assert load_method("agentbalance-no-gating").name == "agentbalance-no-gating"
