"""Fakes for tests: a scripted world (fixed latency/cost per backbone, chosen failures, optional real sleeps) and a
tiny arithmetic task."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentbalance.catalog import Catalog
from agentbalance.mas import MAS, Agent, When
from agentbalance.query import Query
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion


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
            correct=None,
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


def two_agent_chain(first: str, second: str, role: str = "Mathematician") -> MAS:
    """a0 on `first` answers, d on `second` reads it and decides: the smallest MAS with an upstream message."""
    agents = [Agent(id="a0", role=role, backbone=first), Agent(id="d", role=role, backbone=second)]
    return MAS(agents=agents, edges=[("a0", "d")], decision="d")
