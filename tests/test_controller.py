"""The controller: exact log-probabilities (brute force on a tiny case), valid MAS, greedy construction."""

from __future__ import annotations

import itertools
import math

import torch

from agentbalance.policy.context import BACKBONE_NUMERIC_FEATURES, ControllerContext
from agentbalance.policy.controller import Controller, ControllerConfig, Decisions, Step
from agentbalance.policy.representation import AgentRepresentation
from agentbalance.policy.topology import TopologyChoice

EMBED = 16


def tiny_context(roles: int = 3, pools: tuple[int, ...] = (0, 0, 1)) -> ControllerContext:
    generator = torch.Generator().manual_seed(0)
    backbones = len(pools)
    return ControllerContext(
        role_names=(*tuple(f"Role{i}" for i in range(roles - 1)), "Decision Maker"),
        decision_index=roles - 1,
        role_embeddings=torch.randn(roles, EMBED, generator=generator),
        backbone_names=tuple(f"m{i}" for i in range(backbones)),
        profile_embeddings=torch.randn(backbones, 3, EMBED, generator=generator),
        backbone_numeric=torch.randn(backbones, BACKBONE_NUMERIC_FEATURES, generator=generator),
        backbone_latency_s=torch.tensor([1.0 + i for i in range(backbones)]),
        backbone_tok_cost=torch.tensor([0.01 * (i + 1) for i in range(backbones)]),
        pool_of_backbone=torch.tensor(pools),
        pool_count=max(pools) + 1,
    )


def tiny_controller(seed: int = 0) -> Controller:
    torch.manual_seed(seed)
    controller = Controller(tiny_context(), ControllerConfig(embed_dim=EMBED, hidden=8))
    with torch.no_grad():  # sharpen nothing, but make every head non-trivial
        for parameter in controller.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return controller


def every_decision(context: ControllerContext) -> list[Decisions]:
    """All decision vectors of the tiny case: pool, the decision agent's backbone in it, any backbone for the
    other roles (each from a pool of its own), gates, canonical order, hops, edges, and the flags of every
    kept agent with two or more inputs."""
    roles, decision = context.role_count, context.decision_index
    gated = [r for r in range(roles) if r != decision]
    result = []
    for pool in range(context.pool_count):
        members = [m for m in range(context.backbone_count) if int(context.pool_of_backbone[m]) == pool]
        for helper_backbones in itertools.product(range(context.backbone_count), repeat=roles - 1):
            for decision_backbone in members:
                backbones = [*helper_backbones[:decision], decision_backbone, *helper_backbones[decision:]]
                for gates in itertools.product([False, True], repeat=len(gated)):
                    kept = [r for r, g in zip(gated, gates, strict=True) if g]
                    keep = torch.ones(1, roles, dtype=torch.bool)
                    for r, g in zip(gated, gates, strict=True):
                        keep[0, r] = g
                    for order in itertools.permutations(kept):
                        full_order = list(order) + sorted(set(range(roles)) - set(order))
                        pairs = [(order[i], order[j]) for j in range(len(order)) for i in range(j)]
                        for hops in range(1, max(len(kept), 1) + 1):
                            for chosen in itertools.product([False, True], repeat=len(pairs)):
                                edges = torch.zeros(1, roles, roles, dtype=torch.bool)
                                for (i, j), take in zip(pairs, chosen, strict=True):
                                    edges[0, i, j] = take
                                topology = TopologyChoice(
                                    torch.tensor([full_order]),
                                    torch.tensor([hops]),
                                    edges,
                                    torch.zeros(1),
                                    torch.zeros(1),
                                    torch.zeros(1),
                                )
                                eligible = _with_two_inputs(edges[0], kept, decision)
                                for flags in itertools.product([False, True], repeat=len(eligible)):
                                    conditional = torch.zeros(1, roles, dtype=torch.bool)
                                    for r, flag in zip(eligible, flags, strict=True):
                                        conditional[0, r] = flag
                                    result.append(
                                        Decisions(
                                            torch.tensor([pool]), torch.tensor([backbones]), keep, topology, conditional
                                        )
                                    )
    return result


def stacked(decisions: list[Decisions]) -> Decisions:
    """Many single-query decision vectors as one batch, scored in one forward pass."""
    topologies = [d.topology for d in decisions]
    return Decisions(
        torch.cat([d.pool for d in decisions]),
        torch.cat([d.backbones for d in decisions]),
        torch.cat([d.keep for d in decisions]),
        TopologyChoice(*(torch.cat([getattr(t, f) for t in topologies]) for f in TopologyChoice.__dataclass_fields__)),
        torch.cat([d.conditional for d in decisions]),
    )


def score_every_decision(controller: Controller, query: torch.Tensor) -> tuple[list[Decisions], Step]:
    """Every decision vector of the tiny case and one given-mode pass that scores them all for `query`."""
    decisions = every_decision(controller.context)
    return decisions, controller(query.expand(len(decisions), -1), mode="given", given=stacked(decisions))


def _with_two_inputs(edges: torch.Tensor, kept: list[int], decision: int) -> list[int]:
    """The kept agents with at least two inputs, counting the implied edges of every sink into the decision agent."""
    sinks = [r for r in kept if not any(bool(edges[r, j]) for j in kept)]
    inputs = {j: sum(bool(edges[i, j]) for i in kept) for j in kept}
    inputs[decision] = len(sinks)
    return [r for r, count in inputs.items() if count >= 2]


def test_log_probabilities_of_all_decision_vectors_sum_to_one() -> None:
    controller = tiny_controller()
    _, step = score_every_decision(controller, torch.randn(1, EMBED))
    total = float(step.log_prob.detach().double().exp().sum())
    assert abs(total - 1.0) < 1e-4


def test_sampled_log_prob_equals_the_scored_log_prob_and_the_parts_add_up() -> None:
    controller = tiny_controller(seed=1)
    queries = torch.randn(64, EMBED)
    sampled = controller(queries, mode="sample", generator=torch.Generator().manual_seed(1))
    rescored = controller(queries, mode="given", given=sampled.decisions)
    assert torch.allclose(sampled.log_prob, rescored.log_prob, atol=1e-5)
    assert torch.allclose(sum(sampled.parts.values()), sampled.log_prob, atol=1e-5)
    assert torch.isfinite(sampled.log_prob).all()


def test_sampling_frequencies_match_the_probabilities() -> None:
    controller = tiny_controller(seed=2)
    query = torch.randn(1, EMBED)
    draws = 4000
    step = controller(query.expand(draws, -1), mode="sample", generator=torch.Generator().manual_seed(3))
    counts: dict[str, int] = {}
    for index in range(draws):
        mas = controller.to_mas(step.decisions, index)
        key = str(mas.to_json())
        counts[key] = counts.get(key, 0) + 1
    # the most frequent MAS: its frequency matches the probability of its decision vector(s)
    top_key, top_count = max(counts.items(), key=lambda item: item[1])
    probability = 0.0
    decisions, scored = score_every_decision(controller, query)  # its decisions add the implied sink edges
    for index in range(len(decisions)):
        if str(controller.to_mas(scored.decisions, index).to_json()) == top_key:
            probability += math.exp(float(scored.log_prob[index].detach()))
    frequency = top_count / draws
    assert abs(frequency - probability) < 4 * math.sqrt(probability * (1 - probability) / draws) + 1e-3


def test_every_sample_is_a_valid_mas_whose_decision_agent_comes_last() -> None:
    controller = tiny_controller(seed=4)
    step = controller(torch.randn(200, EMBED), mode="sample", generator=torch.Generator().manual_seed(4))
    for index in range(200):
        mas = controller.to_mas(step.decisions, index)
        rebuilt = type(mas).from_json(mas.to_json())  # full validation: acyclic, everyone reaches the decision agent
        assert rebuilt.topological_order()[-1] == mas.decision
        assert mas.depth() <= int(step.decisions.topology.hops[index]) + 1


def test_greedy_construction_is_deterministic() -> None:
    controller = tiny_controller(seed=5)
    queries = torch.randn(10, EMBED)
    first = controller(queries, mode="greedy")
    second = controller(queries, mode="greedy")
    for index in range(10):
        assert controller.to_mas(first.decisions, index) == controller.to_mas(second.decisions, index)


def test_the_pool_cap_is_never_exceeded() -> None:
    torch.manual_seed(6)
    controller = Controller(tiny_context(), ControllerConfig(embed_dim=EMBED, hidden=8, max_pool=0, delta=5.0))
    step = controller(torch.randn(300, EMBED), mode="sample", generator=torch.Generator().manual_seed(6))
    assert (step.decisions.pool == 0).all()
    assert (controller.context.pool_of_backbone[step.decisions.backbones] == 0).all()


def test_the_expected_chain_length_counts_the_agents_a_chain_can_span() -> None:
    """L_max = 1 + sum_k k pi_hop(k): 1 for the decision agent alone, between 2 and 1 + kept agents otherwise."""
    controller = tiny_controller()
    decisions, step = score_every_decision(controller, torch.randn(1, EMBED))
    for index, one in enumerate(decisions):
        kept = int(one.keep.sum()) - 1  # optional agents kept
        length = float(step.expected_length[index].detach())
        assert length == 1.0 if kept == 0 else 2.0 - 1e-6 <= length <= 1.0 + kept + 1e-6


def test_a_pool_cap_gives_finite_gradients() -> None:
    """Training under --max-pool: the masked pools must not turn the thresholds' gradients into NaN."""
    torch.manual_seed(7)
    controller = Controller(tiny_context(), ControllerConfig(embed_dim=EMBED, hidden=8, max_pool=0))
    step = controller(torch.randn(32, EMBED), mode="sample", generator=torch.Generator().manual_seed(7))
    (-(step.log_prob + step.entropy).mean()).backward()
    assert all(torch.isfinite(p.grad).all() for p in controller.parameters() if p.grad is not None)


def test_the_agent_representation_stays_on_one_scale_however_large_its_inputs_grow() -> None:
    """The topology's edge scorer is bilinear in the agent representation, so imitating sharp edges pushes
    its inputs (backbone vectors, role projections) to grow; gating and escalation read the same vectors and
    saturate if it follows (every gating unit dead, cascades built as one backbone). Normalised, each agent's
    vector keeps a root mean square of about 1 (the norm's initial gain) at any input scale, and still
    depends on its inputs."""
    generator = torch.Generator().manual_seed(0)
    representation = AgentRepresentation(embed_dim=8, hidden=16)
    roles, queries = torch.randn(3, 8, generator=generator), torch.randn(2, 8, generator=generator)
    backbones = torch.randn(2, 3, 16, generator=generator)
    for scale in (1.0, 1e3):
        agents = representation(roles * scale, queries * scale, backbones * scale)
        assert torch.allclose(agents.pow(2).mean(-1).sqrt(), torch.ones(2, 3), atol=1e-3)
    assert not torch.allclose(representation(roles, queries, backbones), representation(roles, queries, -backbones))
