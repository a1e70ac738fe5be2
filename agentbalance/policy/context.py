"""What the controller knows about its candidates: roles, Pareto-kept backbones, pools, as tensors.

Built from a catalog, a role library and a text encoder; rebuilt for a new catalog (inductive use),
so no learned parameter depends on which backbones exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.errors import AgentBalanceError
from agentbalance.pooling import PoolingResult
from agentbalance.roles import RoleKind, RoleSet

BACKBONE_NUMERIC_FEATURES = 5  # perf, log TokCost, log Lat, reasoning flag, log active params

# A free backbone (price 0: a model served on one's own machine) has no log cost. The features read a cost below
# these as these, far cheaper than any priced backbone yet finite: Tok in USD per 100 queries, Lat in seconds.
TOK_COST_FLOOR = 1e-5
LATENCY_FLOOR_S = 1e-3


def log_costs(tok_cost: torch.Tensor, latency_s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log TokCost and log Lat, each floored (a free or instant backbone stays a finite feature)."""
    return torch.log(tok_cost.clamp_min(TOK_COST_FLOOR)), torch.log(latency_s.clamp_min(LATENCY_FLOOR_S))


@dataclass(frozen=True)
class ControllerCatalogs:
    """The backbones as a controller sees them: `described` gives each one's profile texts (published
    scores, prices, type), `pooled` the Pareto filter, the pools and the numeric features. They differ in
    a replay world, whose pools come from the accuracies and lengths recorded on its training split."""

    described: Catalog
    pooled: Catalog

    def to_json(self) -> dict[str, Any]:
        return {"described": self.described.to_json(), "pooled": self.pooled.to_json()}


@dataclass(frozen=True)
class ControllerContext:
    """Candidate agents (one per role) and candidate backbones (the Pareto-kept ones), with their features."""

    role_names: tuple[str, ...]
    decision_index: int
    role_embeddings: torch.Tensor  # [R, H] role name + description
    backbone_names: tuple[str, ...]
    profile_embeddings: torch.Tensor  # [M, 3, H] performance, price, type profiles
    backbone_numeric: torch.Tensor  # [M, BACKBONE_NUMERIC_FEATURES], standardised
    backbone_latency_s: torch.Tensor  # [M] latency proxy of one call (seconds)
    backbone_tok_cost: torch.Tensor  # [M] TokCost proxy (USD per 100 single-agent queries)
    pool_of_backbone: torch.Tensor  # [M] pool index, 0 = cheapest tier
    pool_count: int

    @property
    def role_count(self) -> int:
        return len(self.role_names)

    @property
    def backbone_count(self) -> int:
        return len(self.backbone_names)

    def pool_mask(self) -> torch.Tensor:
        """[P, M] True where backbone m belongs to pool p."""
        return self.pool_of_backbone.unsqueeze(0) == torch.arange(self.pool_count).unsqueeze(1)

    @classmethod
    def build(cls, catalog: Catalog, pools: PoolingResult, roles: RoleSet, encoder: TextEncoder) -> ControllerContext:
        names = tuple(name for pool in pools.pools for name in pool)  # cheapest pool first
        if not names:
            raise AgentBalanceError(f"{catalog.source}: no backbone survives the Pareto filter")
        backbones = [catalog[name] for name in names]
        triples = pools.triples.loc[list(names)]
        role_texts = [f"{role.name}: {role.description}" for role in roles]
        decision = next(i for i, role in enumerate(roles) if role.kind is RoleKind.DECISION)
        tok_cost, latency_s = triples["tok_cost"].to_numpy(float), triples["lat"].to_numpy(float)
        numeric = np.stack(
            [
                triples["perf"].to_numpy(float) / 100,
                np.log(np.maximum(tok_cost, TOK_COST_FLOOR)),
                np.log(np.maximum(latency_s, LATENCY_FLOOR_S)),
                np.array([float(b.reasoning) for b in backbones]),
                np.array([math.log(b.params_active_b or 10.0) for b in backbones]),
            ],
            axis=1,
        )
        return cls(
            role_names=tuple(roles.names),
            decision_index=decision,
            role_embeddings=torch.from_numpy(encoder.encode(role_texts)).float(),
            backbone_names=names,
            profile_embeddings=torch.from_numpy(encoder.encode_profiles(backbones)).float(),
            backbone_numeric=torch.from_numpy(_standardise(numeric)).float(),
            backbone_latency_s=torch.tensor(latency_s, dtype=torch.float32),
            backbone_tok_cost=torch.tensor(tok_cost, dtype=torch.float32),
            pool_of_backbone=torch.tensor([pools.pool_of(name) for name in names]),
            pool_count=len(pools.pools),
        )


def _standardise(features: np.ndarray) -> np.ndarray:
    """Fixed reference scales, not this catalog's spread: an unseen catalog maps to the same scale."""
    centre = np.array([0.75, math.log(0.1), math.log(5.0), 0.5, math.log(10.0)])
    scale = np.array([0.15, 1.5, 1.0, 0.5, 1.2])
    return (features - centre) / scale
