"""What every compared method is: named settings of its cost knob, and a fit that returns a MAS builder.

Baselines train on the same training split, run in the same world and are charged by the same
accounting as agentbalance (`Experiment`); only the way they choose a MAS differs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import torch

from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import Experiment
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.train.policy_gradient import (
    Penalty,
    PolicyGradientConfig,
    epoch_batches,
    optimiser_step,
    policy_gradient_loss,
    reward_matrix,
    sampled_pairs,
)

Constructor = Callable[[Sequence[Query]], list[MAS]]  # one MAS per query, from the query text only


class Method(Protocol):
    """A compared system. `settings` are the points of its sweep, known before any training, so an
    interrupted sweep can skip the finished ones; `fit` trains (if at all) for one setting."""

    name: str

    def settings(self, experiment: Experiment, points: int) -> list[str]: ...

    def fit(self, experiment: Experiment, setting: str) -> Constructor: ...


def penalty_grid(experiment: Experiment, points: int) -> list[str]:
    """Settings "kappa=K" for K from 0 (cost ignored) to 2 (a single call of a typical kept backbone
    costs two correct answers), geometric in between: the same grid for every learned baseline."""
    if points < 1:
        raise AgentBalanceError(f"--points must be at least 1, got {points}")
    # with one point past 0 it is the far end (2), so that any --points >= 2 spans the whole range
    kappas = [0.0, *np.geomspace(0.02 if points > 2 else 2.0, 2.0, points - 1)] if points > 1 else [0.0]
    return [f"kappa={k:.4g}" for k in kappas]


def kappa_of(setting: str) -> float:
    """The kappa of a "kappa=K" setting, checked to be a finite number >= 0."""
    try:
        kappa = float(setting.removeprefix("kappa="))
    except ValueError:
        raise AgentBalanceError(f"not a cost-penalty setting: {setting!r} (expected kappa=NUMBER)") from None
    if not (math.isfinite(kappa) and kappa >= 0):
        raise AgentBalanceError(f"cost-penalty setting {setting!r}: kappa must be a finite number >= 0")
    return kappa


def penalty_of(experiment: Experiment, setting: str) -> Penalty:
    """The lambdas of a "kappa=K" setting: kappa divided by the kept backbones' mean TokCost / Lat."""
    kappa = kappa_of(setting)
    tok = float(experiment.context.backbone_tok_cost.mean())
    lat = float(experiment.context.backbone_latency_s.mean())
    return Penalty(kappa / tok if math.isfinite(tok) and tok > 0 else 0.0, kappa / lat if lat > 0 else 0.0)


def topology_backbone(experiment: Experiment) -> str:
    """The one backbone that topology-only baselines (AgentPrune-, AgentDropout-, G-Designer-style) put on
    every agent: those methods never choose LLMs. The strongest kept backbone among the cheaper half (TokCost
    at most the kept backbones' median), so the baselines are neither starved nor handed the priciest model;
    ties go to the cheaper, then to the earlier in kept order."""
    kept = experiment.kept
    triples = experiment.pools.triples.loc[kept]
    median = float(np.median(triples["tok_cost"].to_numpy(float)))
    affordable = [name for name in kept if float(triples.at[name, "tok_cost"]) <= median]
    return max(affordable, key=lambda n: (float(triples.at[n, "perf"]), -float(triples.at[n, "tok_cost"])))


class PenaltySweptMethod:
    """A learned baseline swept over the shared cost-penalty grid; `config` sets its training budget."""

    name: str

    def __init__(self, config: PolicyGradientConfig | None = None) -> None:
        self.config = config

    def settings(self, experiment: Experiment, points: int) -> list[str]:
        return penalty_grid(experiment, points)


class SampledPolicy(Protocol):
    """A learned MAS builder: samples MAS with their log-probabilities (from its own seeded generator, never
    torch's global one), or builds the most likely ones."""

    def parameters(self) -> object: ...

    def sample(self, embeddings: torch.Tensor) -> tuple[list[MAS], torch.Tensor, torch.Tensor]:
        """MAS, log-probability [N] and entropy [N] for a batch of query embeddings [N, H]."""
        ...

    def greedy(self, embeddings: torch.Tensor) -> list[MAS]: ...


def train_sampled_policy(
    policy: SampledPolicy,
    experiment: Experiment,
    penalty: Penalty | Callable[[np.random.Generator], Penalty],
    config: PolicyGradientConfig | None = None,
    bonus: Callable[[Sequence[MAS]], Sequence[float]] | None = None,
) -> Constructor:
    """REINFORCE on the training split with the shared reward; returns the greedy builder.

    `penalty` may instead be drawn afresh for each batch (budget-conditioned training, as in CoRL: the
    drawing callable also hands the policy its condition); `bonus` adds a method's own shaping term to the
    reward of each sampled MAS (e.g. RL-Focal's diversity reward)."""
    config = config or PolicyGradientConfig()
    generator = np.random.default_rng(experiment.seed)  # batches and drawn penalties; the policy samples with its own
    parameters = list(policy.parameters())  # type: ignore[call-overload]
    optimiser = torch.optim.Adam(parameters, lr=config.learning_rate) if parameters else None
    train = experiment.splits.train
    samples = config.samples_per_query
    for _epoch in range(config.epochs if optimiser is not None else 0):
        for rows in epoch_batches(len(train), config.batch_queries, generator):
            batch = [train[i] for i in rows]
            batch_penalty = penalty(generator) if callable(penalty) else penalty
            embeddings = experiment.embed(batch).repeat_interleave(samples, dim=0)
            systems, log_prob, entropy = policy.sample(embeddings)
            outcomes = experiment.execute(sampled_pairs(systems, batch, samples))
            shaping = bonus(systems) if bonus is not None else None
            reward = reward_matrix(outcomes, [batch_penalty] * len(outcomes), samples, shaping)
            loss = policy_gradient_loss(reward, log_prob, entropy, config.entropy_bonus)
            assert optimiser is not None
            optimiser_step(optimiser, loss, parameters)

    def construct(queries: Sequence[Query]) -> list[MAS]:
        with torch.no_grad():
            return policy.greedy(experiment.embed(queries))

    return construct
