"""The answers a served-traffic log already paid for (`serve --log-dir DIR`), reused when `record --task served
--data DIR` records its questions: an agent that answered a request from the question alone (no inputs, no error,
not skipped) stands for its backbone's answer to that question, so it is graded (`--judge`) instead of asked again.

The k-th such agent of a backbone in a request (in the MAS's order) is that backbone's sample k. A reused answer is
what the served agent wrote under its own role's prompt, not under the recorder's neutral one; its cost, tokens and
latency are those it was served at, and it counts as served from a cache (nothing is paid for it now).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_jsonl_objects
from agentbalance.tasks.served_questions import REQUESTS_FILE, served_log_file
from agentbalance.worlds.base import AgentCall, Completion, World, WrappedWorld

__all__ = ["REQUESTS_FILE", "ServedAnswers", "read_served_answers"]
AnswerKey = tuple[str, str, int]  # (request id, backbone, sample)


def read_served_answers(path: Path) -> dict[AnswerKey, Completion]:
    """Every answer of the log given from the question alone, keyed by (request id, backbone, sample)."""
    file = served_log_file(path)
    answers: dict[AnswerKey, Completion] = {}
    for number, record in read_jsonl_objects(file, "served log"):
        agents = record.get("agents")
        if not isinstance(agents, list):
            raise AgentBalanceError(f"{file}: line {number}: a logged request needs its `agents`, a list")
        samples: Counter[str] = Counter()
        for agent in agents:
            if not _answered_alone(agent):
                continue
            try:
                completion = Completion(
                    text=str(agent["text"]),
                    answer=agent.get("answer"),
                    prompt_tokens=int(agent["prompt_tokens"]),
                    completion_tokens=int(agent["completion_tokens"]),
                    cost_usd=float(agent["cost_usd"]),
                    latency_s=float(agent["latency_s"]),
                    reasoning_tokens=int(agent.get("reasoning_tokens") or 0),
                    cached=True,  # paid when it was served
                )
            except (KeyError, TypeError, ValueError) as error:
                where = f"{file}: line {number}: agent {agent.get('id')!r}"
                raise AgentBalanceError(f"{where} is damaged: {error}") from None
            backbone = str(agent["backbone"])
            answers[(str(record["id"]), backbone, samples[backbone])] = completion
            samples[backbone] += 1
    return answers


def _answered_alone(agent: Any) -> bool:
    return (
        isinstance(agent, dict)
        and not agent.get("inputs")
        and agent.get("error") is None
        and agent.get("skipped") is None
        and bool(agent.get("text"))
        and bool(agent.get("backbone"))
    )


@dataclass
class ServedAnswers(WrappedWorld):
    """`answering` with the served log's answers in front: a call for an answer the log holds gets it (counted in
    `reused`); any other call goes to `answering`."""

    answering: World
    answers: dict[AnswerKey, Completion]
    reused: int = 0

    async def complete(self, call: AgentCall) -> Completion:
        served = self.answers.get((call.query.id, call.backbone.name, call.sample))
        if served is not None:
            self.reused += 1
            return served
        return await self.answering.complete(call)
