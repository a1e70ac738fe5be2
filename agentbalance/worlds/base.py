"""The one protocol every world implements: complete one agent's call, return what it cost.

Worlds answer calls; they never decide which agents run or how they are wired (that is the policy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agentbalance.catalog import Backbone, Catalog
from agentbalance.mas import Agent
from agentbalance.query import Query
from agentbalance.roles import Role


@dataclass(frozen=True)
class Completion:
    """One agent call's result. Usage is per call: callers sum what they are given, never a global counter.

    `correct` is set by worlds that know the truth of this answer (simulated, replay); else None.
    """

    text: str
    answer: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    reasoning_tokens: int = 0
    correct: bool | None = None


@dataclass(frozen=True)
class Upstream:
    """A predecessor's finished call, as an agent receives it."""

    agent_id: str
    role: Role
    backbone: Backbone
    completion: Completion


@dataclass(frozen=True)
class AgentCall:
    """Everything a world needs for one agent call: who, with which prompt, on which query, given which inputs."""

    agent: Agent
    role: Role
    backbone: Backbone
    messages: list[dict[str, str]]
    query: Query
    inputs: Sequence[Upstream] = field(default_factory=tuple)


class AgentCallFailed(Exception):
    """A call that did not produce a completion (timeouts, API errors); the runner records it.

    It carries what the failed attempt still cost, so accounting stays exact.
    """

    def __init__(self, message: str, latency_s: float = 0.0, cost_usd: float = 0.0, prompt_tokens: int = 0) -> None:
        super().__init__(message)
        self.latency_s = latency_s
        self.cost_usd = cost_usd
        self.prompt_tokens = prompt_tokens


@runtime_checkable
class World(Protocol):
    """Simulated, replay or live: `await world.complete(call)` answers one agent call."""

    name: str
    simulated: bool
    catalog: Catalog

    async def complete(self, call: AgentCall) -> Completion:
        """Answer one call, or raise AgentCallFailed (recorded) or AgentBalanceError (a user error: stops)."""
        ...
