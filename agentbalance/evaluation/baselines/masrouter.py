"""MasRouter-style baseline (our re-implementation of the idea of Yue et al., 2025, not their code): a cascade
that picks a collaboration mode, then an agent count, then roles, then one LLM per agent, trained by REINFORCE
with the shared cost penalty.

It is topology-first: the mode and roles are fixed before any backbone is chosen, and no stage sees the latency
of what it builds (the cost enters only through the reward).
"""

from __future__ import annotations

import torch
from torch import nn

from agentbalance.evaluation.baselines._routing import (
    HIDDEN,
    BackboneScorer,
    Decisions,
    RoutingPolicy,
    Step,
    choose,
    choose_sequence,
    mlp,
)
from agentbalance.evaluation.baselines.base import (
    Constructor,
    PenaltySweptMethod,
    kappa_of,
    penalty_of,
    train_sampled_policy,
)
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.policy.context import ControllerContext
from agentbalance.policy.sampling import seeded
from agentbalance.templates import DEBATERS, TOPOLOGIES, agent_id

# The collaboration modes are the fixed topologies (complete, chain, star, layered, debate), wired over the
# chosen roles in the order they were chosen, the decision agent last.
MODES: tuple[str, ...] = tuple(TOPOLOGIES)


class MasRouterPolicy(RoutingPolicy):
    """p(mode | q) p(n | q, mode) prod_t p(role_t | q, mode, roles_<t) prod_agents p(LLM | q, mode, role).

    n counts the agents with the decision agent (1 = the decision agent alone); the n - 1 other roles are drawn
    without replacement, each conditioned on those already drawn; every agent, the decision agent included, is
    routed to a kept backbone scored from the backbone's features. A debate has at most DEBATERS debaters.
    """

    def __init__(self, context: ControllerContext, seed: int) -> None:
        super().__init__(context, seed)
        embed, roles = self.embed_dim, context.role_count
        self.others = [r for r in range(roles) if r != context.decision_index]
        self.query = nn.Sequential(nn.Linear(embed, HIDDEN), nn.GELU())
        self.mode_head = nn.Linear(HIDDEN, len(MODES))
        self.mode_embedding = nn.Embedding(len(MODES), HIDDEN)
        self.count_head = mlp(2 * HIDDEN, roles)
        self.role_state = mlp(2 * HIDDEN + embed, HIDDEN)
        self.role_keys = nn.Linear(embed, HIDDEN)
        self.router = BackboneScorer(2 * HIDDEN + embed, embed)
        too_many = torch.arange(roles) > DEBATERS  # count index n - 1 = number of debaters
        self.register_buffer("debate_mask", too_many, persistent=False)

    def decide(self, embeddings: torch.Tensor, mode: str, given: Decisions | None = None) -> Step:
        ctx, batch = self.context, embeddings.shape[0]
        g = given or {}
        query = self.query(embeddings)
        collaboration = choose(self.mode_head(query), mode, self.generator, g.get("mode"))
        query_mode = torch.cat([query, self.mode_embedding(collaboration.index)], dim=1)

        count_logits = self.count_head(query_mode)
        is_debate = (collaboration.index == MODES.index("debate")).unsqueeze(1)
        count_logits = count_logits.masked_fill(is_debate & self.debate_mask, float("-inf"))
        count = choose(count_logits, mode, self.generator, g.get("count"))  # index = number of other roles

        other_embeddings = ctx.role_embeddings[self.others]  # [R-1, H]
        keys = self.role_keys(other_embeddings)

        def role_logits(picked: torch.Tensor) -> torch.Tensor:
            chosen = picked.float() @ other_embeddings / picked.sum(1, keepdim=True).clamp_min(1)
            return self.role_state(torch.cat([query_mode, chosen], dim=1)) @ keys.T * HIDDEN**-0.5

        others = len(self.others)
        roles = choose_sequence(role_logits, count.index, others, others, mode, self.generator, g.get("roles"))

        # routing slots: the chosen roles in order, then the decision role
        library_index = torch.tensor(self.others)[roles.index.clamp_min(0)]
        slot_roles = torch.cat([library_index, torch.full((batch, 1), ctx.decision_index)], dim=1)  # [B, R]
        active = torch.cat([roles.index >= 0, torch.ones(batch, 1, dtype=torch.bool)], dim=1)
        slots = slot_roles.shape[1]
        features = torch.cat([query_mode.unsqueeze(1).expand(-1, slots, -1), ctx.role_embeddings[slot_roles]], dim=2)
        logits = self.router(features, self.router.vectors(ctx))  # [B, R, M]
        given_backbones = g["backbones"].reshape(-1) if "backbones" in g else None
        routed = choose(logits.reshape(batch * slots, -1), mode, self.generator, given_backbones, active.reshape(-1))

        decisions = {
            "mode": collaboration.index,
            "count": count.index,
            "roles": roles.index,
            "backbones": routed.index.view(batch, slots),
        }
        log_prob = collaboration.log_prob + count.log_prob + roles.log_prob + routed.log_prob.view(batch, slots).sum(1)
        entropy = collaboration.entropy + count.entropy + roles.entropy + routed.entropy.view(batch, slots).sum(1)
        return Step(decisions, log_prob, entropy)

    def systems(self, decisions: Decisions) -> list[MAS]:
        ctx = self.context
        decision = ctx.decision_index
        result = []
        for kind, role_row, backbone_row in zip(
            decisions["mode"].tolist(), decisions["roles"].tolist(), decisions["backbones"].tolist(), strict=True
        ):
            chosen = [self.others[j] for j in role_row if j >= 0]
            backbone_of = {role: ctx.backbone_names[backbone_row[t]] for t, role in enumerate(chosen)}
            backbone_of[decision] = ctx.backbone_names[backbone_row[-1]]
            edges = TOPOLOGIES[MODES[kind]](chosen, decision)
            wired = {node for edge in edges for node in edge}
            nodes = [(role, r) for r in (1, 2) for role in chosen if (role, r) in wired] + [(decision, 1)]
            agents = [self.agent(agent_id(node), ctx.role_names[node[0]], backbone_of[node[0]]) for node in nodes]
            ids = [agent.id for agent in agents]
            links = [(agent_id(a), agent_id(b)) for a, b in edges]
            result.append(MAS.trusted(agents, links, ids[-1], order=ids))
        return result


class MasRouterStyle(PenaltySweptMethod):
    """The cascade trained once per cost-penalty setting ("kappa=K", the shared grid of learned baselines)."""

    name = "masrouter-style"

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        kappa_of(setting)  # a clear error for a malformed setting before any training
        with seeded(experiment.seed):
            policy = MasRouterPolicy(experiment.context, experiment.seed)
        return train_sampled_policy(policy, experiment, penalty_of(experiment, setting), self.config)
