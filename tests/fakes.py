"""Fakes for tests: a scripted world (fixed latency/cost per backbone, chosen failures, optional real sleeps), a
tiny arithmetic task, and an untrained controller over a hash encoder (no model load)."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS, Agent, When
from agentbalance.query import Query
from agentbalance.roles import RoleSet
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion

if TYPE_CHECKING:
    import pytest

    from agentbalance.runtime.trace import Trace
    from agentbalance.trained import TrainedController

EMBED = 16


class HashEncoder:
    """A stand-in for the sentence encoder: a fixed random vector per text (no model load)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
            rows.append(np.random.default_rng(seed).standard_normal(EMBED).astype(np.float32))
        return np.stack(rows)


def untrained_controller(roles: RoleSet, backbones: tuple[str, str, str], seed: int = 0) -> TrainedController:
    """An untrained controller over `roles` and three backbones (two cheap ones in pool 0, a strong one in pool 1),
    cheap to make: random embeddings and a hash encoder."""
    import torch

    from agentbalance.budgets import Budget
    from agentbalance.policy.context import BACKBONE_NUMERIC_FEATURES, ControllerContext
    from agentbalance.policy.controller import Controller, ControllerConfig
    from agentbalance.trained import TrainedController

    generator = torch.Generator().manual_seed(seed)
    context = ControllerContext(
        role_names=tuple(roles.names),
        decision_index=roles.names.index(roles.decision.name),
        role_embeddings=torch.randn(len(roles), EMBED, generator=generator),
        backbone_names=backbones,
        profile_embeddings=torch.randn(len(backbones), 3, EMBED, generator=generator),
        backbone_numeric=torch.randn(len(backbones), BACKBONE_NUMERIC_FEATURES, generator=generator),
        backbone_latency_s=torch.tensor([2.0, 1.7, 4.6]),
        backbone_tok_cost=torch.tensor([0.032, 0.047, 0.126]),
        pool_of_backbone=torch.tensor([0, 0, 1]),
        pool_count=2,
    )
    torch.manual_seed(seed)
    controller = Controller(context, ControllerConfig(embed_dim=EMBED, hidden=8)).eval()
    return TrainedController(controller, roles, Budget(), encoder=HashEncoder())  # type: ignore[arg-type]


def trace_record(trace: Trace) -> dict[str, Any]:
    """Everything a trace says but the measured wall time (texts included), to compare two paths' traces."""
    document = trace.to_json(with_text=True)
    document.pop("wall_s")
    return document


def gate_off(controller: TrainedController, role: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the controller's gating keep every agent but `role`'s (a plug-in's gated-off agent, on demand)."""
    import torch

    index = controller.controller.context.role_names.index(role)

    def gates(agents: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        logits = torch.full(agents.shape[:2], 10.0)
        logits[:, index] = -10.0
        return logits

    monkeypatch.setattr(controller.controller.gating, "forward", gates)


def loads_instead(controller: TrainedController, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Make `TrainedController.load` return `controller`; the list it returns records each load's arguments."""
    from agentbalance.trained import TrainedController

    loaded: list[dict[str, Any]] = []

    def load(folder: Any, **options: Any) -> TrainedController:
        loaded.append({"folder": folder, **options})
        return controller

    monkeypatch.setattr(TrainedController, "load", staticmethod(load))
    return loaded


@dataclass
class ScriptedWorld:
    catalog: Catalog
    latency_s: dict[str, float] = field(default_factory=dict)  # per backbone; default 1.0
    fail_agents: set[str] = field(default_factory=set)
    crash_agents: set[str] = field(default_factory=set)
    answers: dict[str, str | None] = field(default_factory=dict)  # per agent id; default: the id (the decision: gold)
    sleep_scale: float = 0.0  # sleep latency x scale, to observe real concurrency
    name: str = "scripted"
    simulated: bool = True
    calls: list[AgentCall] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0

    async def complete(self, call: AgentCall) -> Completion:
        self.calls.append(call)
        self.started[f"{call.query.id}/{call.agent.id}"] = time.perf_counter()
        latency = self.latency_s.get(call.backbone.name, 1.0)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.sleep_scale:
                await asyncio.sleep(latency * self.sleep_scale)
            else:
                await asyncio.sleep(0)
        finally:
            self.in_flight -= 1
        if call.agent.id in self.fail_agents:
            raise AgentCallFailed("HTTP 500 after 3 retries", latency_s=latency, cost_usd=0.001, prompt_tokens=10)
        if call.agent.id in self.crash_agents:
            raise RuntimeError("client bug")
        seen = ",".join(sorted(u.agent_id for u in call.inputs))
        answer = call.query.answer if call.role.kind == "decision" else f"{call.agent.id}"
        answer = self.answers.get(call.agent.id, answer)
        return Completion(
            text=f"{call.agent.id} saw [{seen}]",
            answer=answer,
            prompt_tokens=100 + 10 * len(call.inputs),
            completion_tokens=50,
            cost_usd=0.01,
            latency_s=latency,
            score=None,
        )


@dataclass(frozen=True)
class ArithmeticTask:
    """A tiny task in the Task interface: boxed answers, exact-match scoring."""

    queries: tuple[Query, ...]
    name: str = "arithmetic"
    domain: str = "math"

    def items(self) -> Iterator[Query]:
        return iter(self.queries)

    def prompt(self, query: Query) -> str:
        return query.render()

    def parse(self, text: str, query: Query) -> str | None:
        found = re.search(r"\\boxed\{([^}]*)\}", text)
        return found.group(1) if found else None

    def score(self, query: Query, answer: str | None) -> bool | None:
        return None if query.answer is None else answer == query.answer


def cascade_mas(roles: tuple[str, str, str], backbones: tuple[str, str, str], when: When = "disagree") -> MAS:
    """Two answerers "a" and "b" feeding a decision agent "d" that runs `when` (a cascade by default)."""
    agents = [Agent(id=i, role=r, backbone=b) for i, r, b in zip("ab", roles[:2], backbones[:2], strict=True)]
    agents.append(Agent(id="d", role=roles[2], backbone=backbones[2], when=when))
    return MAS(agents, [("a", "d"), ("b", "d")], "d")


def fork() -> MAS:
    """a -> b; a, b -> d: an edge, and a fan-in (three backbones of the shipped catalog)."""
    agents = [
        Agent(id="a", role="Knowledgeable Expert", backbone="qwen3-8b"),
        Agent(id="b", role="Scientist", backbone="qwen3-30b-a3b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-235b-a22b"),
    ]
    return MAS(agents, [("a", "b"), ("a", "d"), ("b", "d")], "d")


def two_agent_chain(first: str, second: str, role: str = "Mathematician") -> MAS:
    """a0 on `first` answers, d on `second` reads it and decides: the smallest MAS with an upstream message."""
    agents = [Agent(id="a0", role=role, backbone=first), Agent(id="d", role=role, backbone=second)]
    return MAS(agents=agents, edges=[("a0", "d")], decision="d")
