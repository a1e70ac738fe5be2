"""Paper §3.2.3, latency-aware topology synthesis: an order of the kept agents, then forward edges only.

Acyclic by construction with an exact log-probability: Plackett-Luce order, a hop budget k ~ pi_hop that
caps the longest chain (L_max = 1 + sum_k k pi_hop(k) is penalised), Bernoulli forward edges; every
agent that feeds no one feeds the decision agent, which always comes last.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from agentbalance.policy.sampling import (
    GIVEN,
    GREEDY,
    NEGATIVE,
    bernoulli_entropy,
    bernoulli_log_prob,
    categorical,
    categorical_entropy,
    flags,
    gumbel,
)


@dataclass(frozen=True)
class TopologyChoice:
    """Batched topology decisions in role-index space, with their log-probability and entropy."""

    order: torch.Tensor  # [B, R] role indices: kept non-decision agents first (in order), the rest ascending
    hops: torch.Tensor  # [B] k: at most k layers of non-decision agents (1 when there is none)
    edges: torch.Tensor  # [B, R, R] bool, i -> j, including the implied sink -> decision edges
    log_prob: torch.Tensor  # [B]
    entropy: torch.Tensor  # [B] closed-form part (hops and edges)
    expected_length: torch.Tensor  # [B] L_max = 1 + sum_k k pi_hop(k)


class LatencyAwareTopology(nn.Module):
    """Order scores, the pi_hop head and the edge scorer; every head sees the agents' predicted latency."""

    def __init__(self, hidden: int, roles: int, condition_dim: int) -> None:
        super().__init__()
        self.roles = roles
        self.order_score = nn.Linear(hidden + 1, 1)
        self.hop_head = nn.Sequential(
            nn.Linear(hidden + 2 + condition_dim, hidden), nn.GELU(), nn.Linear(hidden, max(roles - 1, 1))
        )
        self.edge_left = nn.Linear(hidden, hidden, bias=False)
        self.edge_latency = nn.Linear(2, 1)

    def forward(
        self,
        agents: torch.Tensor,
        log_latency: torch.Tensor,
        keep: torch.Tensor,
        decision_index: int,
        condition: torch.Tensor,
        mode: str = "sample",
        given: TopologyChoice | None = None,
        generator: torch.Generator | None = None,
    ) -> TopologyChoice:
        """Sample (`mode="sample"`: every draw from `generator`), take the most likely choice (`"greedy"`),
        or score `given` decisions (`"given"`: an impossible given decision gets log-probability -inf)."""
        batch, roles, _ = agents.shape
        candidates = keep.clone()
        candidates[:, decision_index] = False
        count = candidates.sum(dim=1)  # kept non-decision agents per query

        # 1. order: Plackett-Luce over the kept non-decision agents
        scores = self.order_score(torch.cat([agents, log_latency.unsqueeze(-1)], dim=2)).squeeze(-1)
        masked = torch.where(candidates, scores, torch.full_like(scores, NEGATIVE))
        if mode == GIVEN:
            assert given is not None
            order = given.order
        else:
            keys = masked if mode == GREEDY else masked + gumbel(masked.shape, generator)
            order = _canonical_order(torch.argsort(keys, dim=1, descending=True), candidates)
        sorted_scores = masked.gather(1, order)
        position = torch.arange(roles).unsqueeze(0)
        active = position < count.unsqueeze(1)
        tail_logsumexp = torch.flip(torch.logcumsumexp(torch.flip(sorted_scores, [1]), dim=1), [1])
        order_log_prob = torch.where(active, sorted_scores - tail_logsumexp, torch.zeros_like(sorted_scores)).sum(1)
        if mode == GIVEN:
            consistent = (candidates.gather(1, order) == active).all(dim=1)
            order_log_prob = torch.where(consistent, order_log_prob, torch.full_like(order_log_prob, float("-inf")))

        # 2. hop budget k in 1..R-1, at most the number of kept non-decision agents
        kept_float = candidates.float().unsqueeze(-1)
        mean_agent = (agents * kept_float).sum(1) / kept_float.sum(1).clamp_min(1.0)
        total_latency = torch.log((log_latency.exp() * candidates.float()).sum(1) + 1.0)
        hop_logits = self.hop_head(
            torch.cat([mean_agent, total_latency.unsqueeze(1), count.float().unsqueeze(1) / roles, condition], dim=1)
        )
        layers = torch.arange(1, hop_logits.shape[1] + 1).unsqueeze(0)
        hop_logits = hop_logits.masked_fill(layers > count.clamp_min(1).unsqueeze(1), float("-inf"))
        hop_log_probs = torch.log_softmax(hop_logits, dim=1)
        hop_probs = hop_log_probs.exp()
        hops = categorical(hop_log_probs, mode, generator, given.hops - 1 if given is not None else None) + 1
        log_prob = order_log_prob + hop_log_probs.gather(1, (hops - 1).unsqueeze(1)).squeeze(1)
        entropy = categorical_entropy(hop_log_probs)
        # the decision agent alone is a chain of one (its forced hop budget k = 1 spans no agent)
        expected_length = 1.0 + torch.where(count > 0, (hop_probs * layers).sum(1), torch.zeros(batch))

        # 3. forward edges between kept non-decision agents, within the hop budget
        pair_logits = torch.einsum("bid,bjd->bij", self.edge_left(agents), agents) * agents.shape[2] ** -0.5
        latency_pair = torch.stack(
            [log_latency.unsqueeze(2).expand(-1, -1, roles), log_latency.unsqueeze(1).expand(-1, roles, -1)], dim=3
        )
        pair_logits = pair_logits + self.edge_latency(latency_pair).squeeze(-1)
        by_position = pair_logits.gather(1, order.unsqueeze(2).expand(-1, -1, roles)).gather(
            2, order.unsqueeze(1).expand(-1, roles, -1)
        )
        given_by_position = None
        if mode == GIVEN:
            given_by_position = given.edges.gather(1, order.unsqueeze(2).expand(-1, -1, roles)).gather(
                2, order.unsqueeze(1).expand(-1, roles, -1)
            )
        depth = torch.zeros(batch, roles, dtype=torch.long)
        chosen_by_position = torch.zeros(batch, roles, roles, dtype=torch.bool)
        impossible = torch.zeros(batch, dtype=torch.bool)
        for target in range(1, roles):
            for source in range(target):
                allowed = active[:, target] & (depth[:, source] + 1 < hops)
                logit = by_position[:, source, target]
                given_edge = given_by_position[:, source, target] if given_by_position is not None else None
                take = flags(logit, mode, generator, given_edge)
                if given_edge is not None:
                    impossible |= take & ~allowed & active[:, target]  # edges into the decision agent are implied
                take = take & allowed
                edge_log_prob = bernoulli_log_prob(take, logit)
                log_prob = log_prob + torch.where(allowed, edge_log_prob, torch.zeros_like(edge_log_prob))
                edge_entropy = bernoulli_entropy(logit)
                entropy = entropy + torch.where(allowed, edge_entropy, torch.zeros_like(edge_entropy))
                chosen_by_position[:, source, target] = take
                depth[:, target] = torch.maximum(depth[:, target], torch.where(take, depth[:, source] + 1, 0))
        if mode == GIVEN:
            log_prob = torch.where(impossible, torch.full_like(log_prob, float("-inf")), log_prob)

        # back to role-index space, plus the implied edges of every sink into the decision agent
        edges = torch.zeros(batch, roles, roles, dtype=torch.bool)
        rows = order.unsqueeze(2).expand(-1, -1, roles)
        columns = order.unsqueeze(1).expand(-1, roles, -1)
        edges[torch.arange(batch).view(-1, 1, 1), rows, columns] = chosen_by_position
        sinks = candidates & ~edges.any(dim=2)
        edges[:, :, decision_index] = sinks
        return TopologyChoice(order, hops, edges, log_prob, entropy, expected_length)


def dense_topology(keep: torch.Tensor, decision_index: int) -> TopologyChoice:
    """The ablation "dense topology": every kept agent feeds every later one (ascending role order) and
    the decision agent; nothing is sampled, so the log-probability and entropy are 0."""
    batch, roles = keep.shape
    candidates = keep.clone()
    candidates[:, decision_index] = False
    order = _canonical_order(torch.arange(roles).expand(batch, roles), candidates)
    forward = torch.ones(roles, roles, dtype=torch.bool).triu(diagonal=1)  # i -> j for role i < j
    edges = forward.unsqueeze(0) & candidates.unsqueeze(2) & candidates.unsqueeze(1)
    edges[:, :, decision_index] = candidates
    count = candidates.sum(dim=1)
    zeros = torch.zeros(batch)
    return TopologyChoice(order, count.clamp_min(1), edges, zeros, zeros, 1 + count.float())


def _canonical_order(order: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """Kept agents keep their sampled positions; the others follow in ascending role order, so one
    topology has exactly one order representation (needed for an exact probability)."""
    roles = order.shape[1]
    kept_first = candidates.gather(1, order)
    rank = torch.where(kept_first, torch.arange(roles).unsqueeze(0), roles + order)
    return order.gather(1, torch.argsort(rank, dim=1))
