"""RL-Focal-style baseline (our re-implementation of the idea of Tekin et al., 2025, "Dynamic Optimizations of LLM
Ensembles with Two-Stage Reinforcement Learning Agents", not their code): a decider picks a small, diverse ensemble
of backbones per query, and a fusion step turns their answers into one.

The decider is learned by REINFORCE on the shared reward plus a focal-diversity bonus; diversity is measured once,
on the training split, from which backbones fail on the same questions. The fusion step is a decision agent on a
backbone the decider also picks (the paper's fusion agent is a learned model over the members' outputs; ours is an
LLM reading their answers, which is what the worlds can run).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import torch
from torch import nn

from agentbalance.errors import AgentBalanceError
from agentbalance.evaluation.baselines._routing import (
    HIDDEN,
    VECTOR_DIM,
    BackboneScorer,
    Decisions,
    RoutingPolicy,
    Step,
    choose,
    choose_sequence,
    expert_role,
    single_backbone_outcomes,
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

MAX_ENSEMBLE = 3  # "small": the paper's ensembles are a few members of a larger pool
DIVERSITY_WEIGHT = 0.1  # the focal-diversity bonus, in units of one correct answer


def focal_diversity(correct: np.ndarray) -> float:
    """Focal negative correlation of an ensemble from its members' outcomes `correct` [items, k >= 2].

    Each member in turn is the focal model; on the items it fails, the generalized diversity of the members'
    failures is GD = 1 - p(2) / p(1), where p(1) = E[f / k] and p(2) = E[f (f - 1) / (k (k - 1))] with f the
    number of members failing an item (p(2)/p(1): how likely a second member fails where one does). The focal
    diversity is the mean GD over focal models; a focal model that never fails counts as fully diverse (1).
    """
    failed = ~np.asarray(correct, dtype=bool)
    if failed.ndim != 2 or failed.shape[1] < 2:
        raise ValueError(f"focal diversity needs an [items, members >= 2] outcome matrix, got shape {failed.shape}")
    k = failed.shape[1]
    values = []
    for focal in range(k):
        failures = failed[failed[:, focal]].sum(axis=1)  # f >= 1 on every focal-failure item
        if failures.size == 0:
            values.append(1.0)
            continue
        p1 = float(np.mean(failures / k))
        p2 = float(np.mean(failures * (failures - 1) / (k * (k - 1))))
        values.append(1.0 - p2 / p1)
    return float(np.mean(values))


class FocalDiversityTable:
    """Focal diversity of every ensemble of 2..max_size kept backbones, from training-split outcomes [items, M]."""

    def __init__(self, outcomes: np.ndarray, names: Sequence[str], max_size: int) -> None:
        self.index = {name: m for m, name in enumerate(names)}
        self.values = {
            frozenset(members): focal_diversity(outcomes[:, list(members)])
            for size in range(2, max_size + 1)
            for members in combinations(range(len(names)), size)
        }

    def of(self, backbones: Sequence[str]) -> float:
        """The ensemble's focal diversity; 0 for a lone backbone (an ensemble of one has none)."""
        if len(backbones) < 2:
            return 0.0
        return self.values[frozenset(self.index[name] for name in backbones)]

    def bonus(self, systems: Sequence[MAS]) -> list[float]:
        """The decider's diversity reward of each MAS: the weighted focal diversity of its ensemble members."""
        return [
            DIVERSITY_WEIGHT * self.of([agent.backbone for agent in mas.agents if agent.id != mas.decision])
            for mas in systems
        ]


class RLFocalPolicy(RoutingPolicy):
    """p(size | q) prod_t p(member_t | q, size, members_<t) p(fusion | q, size, members) (fusion only when size > 1).

    Members are drawn without replacement, each seeing the features of those already drawn, so the decider can
    learn complementary teams. An ensemble of one answers alone; a larger one answers in the library's expert
    role and the fusion backbone, as the decision agent, answers from their answers.
    """

    def __init__(self, context: ControllerContext, seed: int, expert: str, max_size: int) -> None:
        super().__init__(context, seed)
        if not 1 <= max_size <= context.backbone_count:
            raise AgentBalanceError(f"ensemble size {max_size} is outside 1..{context.backbone_count} kept backbones")
        self.expert, self.max_size = expert, max_size
        self.query = nn.Sequential(nn.Linear(self.embed_dim, HIDDEN), nn.GELU())
        self.size_head = nn.Linear(HIDDEN, max_size)
        self.size_embedding = nn.Embedding(max_size, HIDDEN)
        self.member = BackboneScorer(2 * HIDDEN + VECTOR_DIM, self.embed_dim)
        self.fusion = BackboneScorer(2 * HIDDEN + VECTOR_DIM, self.embed_dim)

    def decide(self, embeddings: torch.Tensor, mode: str, given: Decisions | None = None) -> Step:
        ctx, g = self.context, given or {}
        query = self.query(embeddings)
        size = choose(self.size_head(query), mode, self.generator, g.get("size"))  # index = size - 1
        query_size = torch.cat([query, self.size_embedding(size.index)], dim=1)
        vectors = self.member.vectors(ctx)

        def team(picked: torch.Tensor) -> torch.Tensor:
            return picked.float() @ vectors / picked.sum(1, keepdim=True).clamp_min(1)

        def member_logits(picked: torch.Tensor) -> torch.Tensor:
            return self.member(torch.cat([query_size, team(picked)], dim=1), vectors)

        members = choose_sequence(
            member_logits, size.index + 1, self.max_size, ctx.backbone_count, mode, self.generator, g.get("members")
        )
        picked = torch.zeros(embeddings.shape[0], ctx.backbone_count, dtype=torch.bool)
        picked.scatter_(1, members.index.clamp_min(0), members.index >= 0)
        fusion_logits = self.fusion(torch.cat([query_size, team(picked)], dim=1), self.fusion.vectors(ctx))
        fusion = choose(fusion_logits, mode, self.generator, g.get("fusion"), active=size.index > 0)
        return Step(
            {"size": size.index, "members": members.index, "fusion": fusion.index},
            size.log_prob + members.log_prob + fusion.log_prob,
            size.entropy + members.entropy + fusion.entropy,
        )

    def systems(self, decisions: Decisions) -> list[MAS]:
        names = self.context.backbone_names
        result = []
        for row, fusion in zip(decisions["members"].tolist(), decisions["fusion"].tolist(), strict=True):
            members = [names[m] for m in row if m >= 0]
            if len(members) == 1:
                result.append(self.panel_mas([], members[0], self.expert))
            else:
                result.append(self.panel_mas(members, names[fusion], self.expert))
        return result


class RLFocalStyle(PenaltySweptMethod):
    """The decider trained once per cost-penalty setting ("kappa=K", the shared grid of learned baselines), with
    ensembles of at most MAX_ENSEMBLE members: the penalty moves it from large strong teams to one cheap model."""

    name = "rlfocal-style"

    def fit(self, experiment: Experiment, setting: str) -> Constructor:
        kappa_of(setting)  # a clear error for a malformed setting before any training
        max_size = min(MAX_ENSEMBLE, len(experiment.kept))
        outcomes = single_backbone_outcomes(experiment, experiment.splits.train)
        table = FocalDiversityTable(outcomes, experiment.kept, max_size)
        with seeded(experiment.seed):
            policy = RLFocalPolicy(experiment.context, experiment.seed, expert_role(experiment.roles), max_size)
        return train_sampled_policy(policy, experiment, penalty_of(experiment, setting), self.config, table.bonus)
