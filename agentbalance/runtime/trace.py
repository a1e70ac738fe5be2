"""What one MAS run on one query did: per-agent calls, the answer, and exactly what it cost.

A record, not a calculator: it holds numbers the runner measured and summed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentbalance.worlds.base import verdict


@dataclass(frozen=True)
class AgentTrace:
    """One agent's part: its call's usage and its modelled place on the timeline (seconds from query start)."""

    id: str
    role: str
    backbone: str
    answer: str | None
    text: str
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost_usd: float
    latency_s: float
    start_s: float
    end_s: float
    error: str | None = None
    skipped: str | None = None  # why the agent never launched (a per-query cap, "inputs agreed"), else None
    inputs: tuple[str, ...] = ()
    escalated: bool = False  # a conditional agent that ran: its inputs disagreed (or one failed)
    context_cut: str | None = None  # what was cut from its inputs to fit its backbone's context window


@dataclass(frozen=True)
class Trace:
    """A MAS run on one query. `latency_s` is the modelled critical path, `wall_s` the measured wall time.

    `score` is the answer's quality in [0, 1] (right/wrong tasks: 1.0/0.0; None: ungraded), the grade every
    number is computed from; `correct` is its right/wrong reading, for people (`verdict`)."""

    id: str
    answer: str | None
    score: float | None
    cost_usd: float
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    wall_s: float
    world: str
    agents: tuple[AgentTrace, ...] = field(default_factory=tuple)
    capped: str | None = None  # which per-query cap stopped new launches, if any
    escalated: bool = False  # a conditional agent ran because its inputs disagreed (or one failed)
    text: str = ""  # what the decision agent passed on: its own reply, or the agreed input's when it was skipped

    @classmethod
    def summed(
        cls,
        query_id: str,
        answer: str | None,
        score: float | None,
        agents: tuple[AgentTrace, ...],
        latency_s: float,
        wall_s: float,
        world: str,
        capped: str | None = None,
        escalated: bool = False,
        text: str = "",
    ) -> Trace:
        """A trace whose cost and token totals are the sums of its agents' (one rule for every runner)."""
        return cls(
            id=query_id,
            answer=answer,
            score=score,
            cost_usd=sum(a.cost_usd for a in agents),
            prompt_tokens=sum(a.prompt_tokens for a in agents),
            completion_tokens=sum(a.completion_tokens for a in agents),
            latency_s=latency_s,
            wall_s=wall_s,
            world=world,
            agents=agents,
            capped=capped,
            escalated=escalated,
            text=text,
        )

    @property
    def correct(self) -> bool | None:
        return verdict(self.score)

    @property
    def failures(self) -> int:
        return sum(agent.error is not None for agent in self.agents)

    def to_json(self, with_text: bool = False) -> dict[str, Any]:
        """The public JSON form (`run --json`); agent texts only when asked (they can be long)."""
        agents = []
        for agent in self.agents:
            record = asdict(agent)
            record["inputs"] = list(agent.inputs)
            if not with_text:
                record.pop("text")
            agents.append(record)
        record: dict[str, Any] = {
            "id": self.id,
            "answer": self.answer,
            "correct": self.correct,
            "score": self.score,
            "cost_usd": self.cost_usd,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "wall_s": self.wall_s,
            "failures": self.failures,
            "capped": self.capped,
            "escalated": self.escalated,
            "world": self.world,
            "agents": agents,
        }
        if with_text:
            record["text"] = self.text
        return record
