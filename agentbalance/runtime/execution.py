"""THE execution semantics of a MAS on one query, step by step, for every path that runs one.

For each agent whose inputs are done it says "run" (with the call to make) or "skip, with this reason"
before any call is made; it folds each finished agent in; at the end it gives the modelled schedule and
critical path, the final answer and its grading. The async runner, the training rollout and the AutoGen
adapter all drive it, so they cannot disagree. It never calls a world and never decides the MAS.

Conditional agents (docs/mas.md#conditional-agents) are decided here too: a "disagree" agent whose inputs
agree is skipped and passes on the agreed answer; one that runs is asked afresh, told that its inputs
disagreed; a "never" agent passes on its inputs' reliability-weighted vote, and so does a conditional agent
that a cap stops or whose call fails.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query, SameAnswer
from agentbalance.roles import Role, RoleSet
from agentbalance.runtime.trace import AgentTrace, Trace
from agentbalance.worlds.base import (
    AgentCall,
    AgentCallFailed,
    Completion,
    Upstream,
    same_recorded_answer,
)

Grader = Callable[[Query, str | None], float | None]
"""A task's scorer or a user's grader: the answer's quality in [0, 1] (a bool counts as 1/0), None when it cannot
grade."""
AGREED = "inputs agreed"  # why a "disagree" agent did not run
VOTED = "vote of its inputs"  # why a "never" agent did not run
MIN_VOTE_WEIGHT = 0.05  # a backbone no better than chance still counts a little, never negatively
DISAGREEMENT_NOTE = (  # what an escalated agent is told; {answers}: its inputs' answers, "; "-separated
    "Other agents disagreed on this question (their answers: {answers}). Solve it yourself and give your own answer."
)


@dataclass(frozen=True)
class Caps:
    """Optional hard per-query caps: once reached, no new agent is launched."""

    max_usd: float | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name, value in (("max_usd", self.max_usd), ("max_seconds", self.max_seconds)):
            # NaN would compare false everywhere and silently never cap; infinity is no cap: both are mistakes
            if value is not None and not (math.isfinite(value) and value > 0):
                raise AgentBalanceError(f"per-query cap {name} must be positive and finite, got {value}")

    @property
    def active(self) -> bool:
        return self.max_usd is not None or self.max_seconds is not None

    def reason(self, spent_usd: float, start_s: float) -> str | None:
        """Why an agent that would start at `start_s` (modelled) after `spent_usd` may not launch, or None."""
        if self.max_usd is not None and spent_usd >= self.max_usd:
            return f"max_usd {self.max_usd:g} reached"
        if self.max_seconds is not None and start_s >= self.max_seconds:
            return f"max_seconds {self.max_seconds:g} reached"
        return None


NO_CAPS = Caps()


@dataclass(frozen=True)
class Skip:
    """An agent that does not run: why, and the completion its successors receive instead (None: nothing).

    `vouched_by` is the backbone whose reliability the output carries downstream (default: the agent's own):
    an agreed answer or a vote carries that of its most reliable input that gave it.
    """

    reason: str
    output: Completion | None = None
    vouched_by: Backbone | None = None


@dataclass(frozen=True, slots=True)
class AgentResult:
    """What one agent's turn produced: a completion, a failure (with what it still cost), or a skip."""

    completion: Completion | None = None
    error: str | None = None
    skipped: str | None = None
    failed_latency_s: float = 0.0
    failed_cost_usd: float = 0.0
    failed_prompt_tokens: int = 0

    @classmethod
    def failed(cls, failure: AgentCallFailed) -> AgentResult:
        return cls(
            error=str(failure) or type(failure).__name__,
            failed_latency_s=failure.latency_s,
            failed_cost_usd=failure.cost_usd,
            failed_prompt_tokens=failure.prompt_tokens,
        )

    @property
    def latency_s(self) -> float:
        return self.completion.latency_s if self.completion is not None else self.failed_latency_s

    @property
    def cost_usd(self) -> float:
        return self.completion.cost_usd if self.completion is not None else self.failed_cost_usd


@dataclass(frozen=True)
class Outcome:
    """What training needs from one MAS run: the answer, its quality score in [0, 1] (right/wrong tasks: 1.0/0.0;
    None: could not be graded), the cost."""

    answer: str | None
    score: float | None
    cost_usd: float
    latency_s: float
    agents: int
    escalated: bool = False  # a conditional agent ran: its inputs disagreed (or one failed)


def grade(query: Query, final: Completion | None, grader: Grader | None) -> float | None:
    """The one grading rule, a quality score in [0, 1]: a world that knows its answer's score (simulated,
    replay) decides; else the task's scorer, for every task (code tasks too: their gold is a test suite, not
    `query.answer`); without a scorer, no answer scores 0 when the gold is known and anything else is ungraded
    (None)."""
    if final is not None and final.score is not None:
        return final.score
    answer = final.answer if final is not None else None
    if grader is not None:
        return _checked_score(grader(query, answer), query)
    if answer is None and query.answer is not None:
        return 0.0
    return None


def _checked_score(score: float | None, query: Query) -> float | None:
    """A grader's verdict as a score: True/False as 1.0/0.0; anything outside [0, 1] is a grader's mistake."""
    if score is None:
        return None
    value = float(score)
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise AgentBalanceError(f"the grader scored query {query.id!r} {score!r}; a score is a number in [0, 1]")
    return value


def sample_indices(mas: MAS) -> dict[str, int]:
    """Which sample of its backbone each agent reads, for the agents that read one other than 0: the k-th agent
    on a backbone reads sample k, so agents sharing a backbone answer as distinct calls would.

    Agents are counted in topological order, ties by agent id: repeatedly the ready agent with the smallest
    id (Kahn's algorithm). The index depends on the MAS alone, never on which agents ran or were skipped.
    """
    if len({agent.backbone for agent in mas.agents}) == len(mas.agents):
        return {}  # the common case: every backbone once, every agent reads sample 0, nothing to sort
    waiting = {agent.id: len(mas.predecessors(agent.id)) for agent in mas.agents}
    ready = [agent_id for agent_id, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    counted: dict[str, int] = {}  # backbone -> agents on it counted so far
    indices: dict[str, int] = {}
    while ready:
        agent_id = heapq.heappop(ready)
        backbone = mas.agent(agent_id).backbone
        k = counted.get(backbone, 0)
        counted[backbone] = k + 1
        if k:
            indices[agent_id] = k
        for successor in mas.successors(agent_id):
            waiting[successor] -= 1
            if waiting[successor] == 0:
                heapq.heappush(ready, successor)
    return indices


class Execution:
    """One MAS on one query in progress. Drive it with `start`/`decide`/`call`/`finish`; read `outcome`
    or `trace` when `done`. Agents are finished in any order consistent with the DAG."""

    __slots__ = (
        "_delivered",
        "_finished_at",
        "_resolved",
        "_samples",
        "_waiting",
        "capped",
        "caps",
        "catalog",
        "escalated",
        "mas",
        "query",
        "results",
        "roles",
        "same_answer",
        "spent_usd",
    )

    def __init__(
        self,
        mas: MAS,
        query: Query,
        roles: RoleSet,
        catalog: Catalog,
        caps: Caps = NO_CAPS,
        same_answer: SameAnswer = same_recorded_answer,
    ) -> None:
        self.mas = mas
        self.query = query
        self.roles = roles
        self.catalog = catalog
        self.caps = caps
        self.same_answer = same_answer  # how conditional agents compare their inputs' answers (the task's rule)
        self.results: dict[str, AgentResult] = {}
        self.spent_usd = 0.0  # over the agents finished so far
        self.capped: str | None = None  # the first cap that stopped a launch
        self.escalated: set[str] = set()  # the conditional agents that ran
        self._delivered: dict[str, Upstream] = {}  # what each answering agent passes on to its successors
        self._finished_at: dict[str, float] = {}  # modelled end time of each finished agent
        self._waiting = {agent.id: len(mas.predecessors(agent.id)) for agent in mas.agents}
        self._resolved: dict[str, tuple[Role, Backbone]] = {}
        self._samples = sample_indices(mas)  # fixed by the MAS, not by what runs: a skipped agent keeps its index

    # ---- stepping

    def start(self) -> list[str]:
        """The agents ready at the start: those without inputs."""
        return [agent_id for agent_id, count in self._waiting.items() if count == 0]

    def start_s(self, agent_id: str) -> float:
        """An agent's modelled start: when its last input finished."""
        return max((self._finished_at[p] for p in self.mas.predecessors(agent_id)), default=0.0)

    def decide(self, agent_id: str) -> Skip | None:
        """Before any call: None if the agent runs, else why it is skipped (a per-query cap, its inputs
        agreed, or it only votes) and what it passes on."""
        when = self.mas.agent(agent_id).when
        if when == "never":
            return self._voted(agent_id, VOTED)
        if self.caps.active:
            reason = self.caps.reason(self.spent_usd, self.start_s(agent_id))
            if reason is not None:
                self.capped = self.capped or reason
                return self._voted(agent_id, reason) if when == "disagree" else Skip(reason)
        if when == "disagree":
            agreed = self._agreement(agent_id)
            if agreed is not None:
                return Skip(AGREED, _free(agreed.completion), agreed.backbone)
            self.escalated.add(agent_id)
        return None

    def call(self, agent_id: str) -> AgentCall:
        """The call of an agent that runs: its role, backbone, the query, the inputs that answered, its sample;
        a conditional agent is asked afresh (no inputs), told that its inputs disagreed."""
        agent = self.mas.agent(agent_id)
        role, backbone = self._role_and_backbone(agent_id)
        sample = self._samples.get(agent_id, 0) if self._samples else 0
        if agent_id in self.escalated:
            note = self._disagreement_note(agent_id)
            return AgentCall(agent, role, backbone, self.query, (), note=note, sample=sample)
        inputs = [self._delivered[p] for p in self.mas.predecessors(agent_id) if p in self._delivered]
        return AgentCall(agent, role, backbone, self.query, inputs, sample=sample)

    def skip(self, agent_id: str, skip: Skip) -> list[str]:
        """Fold in a skipped agent (no cost, no time); returns the agents it makes ready."""
        return self.finish(agent_id, AgentResult(skip.output, skipped=skip.reason), skip.vouched_by)

    def finish(self, agent_id: str, result: AgentResult, vouched_by: Backbone | None = None) -> list[str]:
        """Fold in a finished (or skipped) agent; returns the agents whose last input it was (ready to decide).
        Its completion (a skip's output) is what its successors receive, carrying `vouched_by`'s reliability
        (default: the agent's own backbone); a conditional agent whose call failed passes on its inputs' vote."""
        if agent_id in self.results:
            raise AgentBalanceError(f"agent {agent_id!r} of {self.mas!r} finished twice")
        passed_on = result.completion
        if passed_on is None and result.error is not None and self.mas.agent(agent_id).conditional:
            fallback = self._vote(agent_id)
            if fallback is not None:
                passed_on, vouched_by = _free(fallback.completion), fallback.backbone
        if passed_on is not None:
            role, backbone = self._role_and_backbone(agent_id)
            self._delivered[agent_id] = Upstream(agent_id, role, vouched_by or backbone, passed_on)
        self.results[agent_id] = result
        self.spent_usd += result.cost_usd
        self._finished_at[agent_id] = self.start_s(agent_id) + (0.0 if result.skipped else result.latency_s)
        ready = []
        for successor in self.mas.successors(agent_id):
            self._waiting[successor] -= 1
            if self._waiting[successor] == 0:
                ready.append(successor)
        return ready

    # ---- conditional agents

    def _answered_inputs(self, agent_id: str) -> list[Upstream | None]:
        """What each input passed on, None for an input that failed, was capped or gave no answer."""
        inputs = (self._delivered.get(p) for p in self.mas.predecessors(agent_id))
        return [u if u is not None and u.completion.answer else None for u in inputs]

    def _agreement(self, agent_id: str) -> Upstream | None:
        """The most reliable input, if every input answered and all answers are one (as the task reads them)."""
        inputs = self._answered_inputs(agent_id)
        if any(u is None for u in inputs):
            return None
        answered = [u for u in inputs if u is not None]
        first = str(answered[0].completion.answer)
        if not all(self.same_answer(self.query, first, str(u.completion.answer)) for u in answered[1:]):
            return None
        return max(answered, key=self._vote_weight)

    def _vote(self, agent_id: str) -> Upstream | None:
        """The reliability-weighted vote of the inputs that answered (log-odds of each backbone's catalog
        reliability): the winning answer as given by its most reliable voter; ties go to the earlier input."""
        groups: list[list[Upstream]] = []
        for upstream in (u for u in self._answered_inputs(agent_id) if u is not None):
            answer = str(upstream.completion.answer)
            group = next((g for g in groups if self.same_answer(self.query, str(g[0].completion.answer), answer)), None)
            if group is None:
                groups.append([upstream])
            else:
                group.append(upstream)
        if not groups:
            return None
        weights = [[self._vote_weight(u) for u in group] for group in groups]
        best = max(range(len(groups)), key=lambda g: (round(sum(weights[g]), 9), round(max(weights[g]), 9), -g))
        return max(groups[best], key=self._vote_weight)

    def _voted(self, agent_id: str, reason: str) -> Skip:
        """A skip that passes on the inputs' vote (nothing when no input answered)."""
        winner = self._vote(agent_id)
        return Skip(reason) if winner is None else Skip(reason, _free(winner.completion), winner.backbone)

    def _vote_weight(self, upstream: Upstream) -> float:
        reliability = self.catalog.reliabilities.get(upstream.backbone.name, 0.5)
        return max(MIN_VOTE_WEIGHT, math.log(reliability / (1 - reliability)))

    def _disagreement_note(self, agent_id: str) -> str:
        answers = [u.completion.answer if u is not None else "none" for u in self._answered_inputs(agent_id)]
        return DISAGREEMENT_NOTE.format(answers="; ".join(map(str, answers)))

    def _role_and_backbone(self, agent_id: str) -> tuple[Role, Backbone]:
        """The agent's role and backbone objects, looked up once per agent."""
        if agent_id not in self._resolved:
            agent = self.mas.agent(agent_id)
            self._resolved[agent_id] = (self.roles[agent.role], self.catalog[agent.backbone])
        return self._resolved[agent_id]

    @property
    def done(self) -> bool:
        return len(self.results) == len(self.mas)

    # ---- results

    @property
    def final(self) -> Completion | None:
        """What the decision agent passed on: the MAS's answer (None if it failed or was skipped with nothing)."""
        return self.passed_on(self.mas.decision)

    def passed_on(self, agent_id: str) -> Completion | None:
        """What a finished agent passes on to its successors: its completion, a skip's output, the vote a failed
        conditional agent falls back to; None when nothing (a failure, a skip with no output)."""
        delivered = self._delivered.get(agent_id)
        return delivered.completion if delivered is not None else None

    def latencies(self) -> dict[str, float]:
        return {agent_id: (0.0 if r.skipped else r.latency_s) for agent_id, r in self.results.items()}

    def outcome(self, grader: Grader | None = None) -> Outcome:
        """The run summed for training: answer, grading, cost, critical-path latency."""
        self._check_done()
        final = self.final
        return Outcome(
            answer=final.answer if final is not None else None,
            score=grade(self.query, final, grader),
            cost_usd=self.spent_usd,
            latency_s=self._finished_at[self.mas.decision],
            agents=len(self.mas),
            escalated=bool(self.escalated),
        )

    def trace(self, world: str, wall_s: float, grader: Grader | None = None) -> Trace:
        """The full record: every agent's usage and modelled place on the timeline, the answer, its grading."""
        self._check_done()
        latencies = self.latencies()
        schedule = modelled_schedule(self.mas, latencies)
        agents = []
        for agent in self.mas.agents:
            result = self.results[agent.id]
            completion = result.completion if result.skipped is None else None
            passed_on = self._delivered.get(agent.id)
            start, end = schedule[agent.id]
            agents.append(
                AgentTrace(
                    id=agent.id,
                    role=agent.role,
                    backbone=agent.backbone,
                    answer=passed_on.completion.answer if passed_on is not None else None,
                    text=completion.text if completion is not None else "",
                    prompt_tokens=completion.prompt_tokens if completion is not None else result.failed_prompt_tokens,
                    completion_tokens=completion.completion_tokens if completion is not None else 0,
                    reasoning_tokens=completion.reasoning_tokens if completion is not None else 0,
                    cost_usd=0.0 if result.skipped else result.cost_usd,
                    latency_s=latencies[agent.id],
                    start_s=start,
                    end_s=end,
                    error=result.error,
                    skipped=result.skipped,
                    inputs=tuple(self.mas.predecessors(agent.id)),
                    escalated=agent.id in self.escalated,
                    context_cut=completion.context_cut if completion is not None else None,
                )
            )
        final = self.final
        answer = final.answer if final is not None else None
        score = grade(self.query, final, grader)
        latency_s = schedule[self.mas.decision][1]
        return Trace.summed(
            self.query.id,
            answer,
            score,
            tuple(agents),
            latency_s,
            wall_s,
            world,
            self.capped,
            bool(self.escalated),
            text=final.text if final is not None else "",
        )

    def _check_done(self) -> None:
        if not self.done:
            missing = [a.id for a in self.mas.agents if a.id not in self.results]
            raise AgentBalanceError(f"{self.mas!r} on {self.query.id!r} is not finished: {', '.join(missing)} pending")


def _free(completion: Completion) -> Completion:
    """A completion passed on by an agent that made no call: the same answer and text, no usage, no time."""
    return replace(
        completion,
        prompt_tokens=0,
        completion_tokens=0,
        reasoning_tokens=0,
        cost_usd=0.0,
        latency_s=0.0,
        cached=False,
        context_cut=None,
    )


def modelled_schedule(mas: MAS, latencies: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """(start_s, end_s) of every agent if each starts when all its predecessors end (the critical path).

    Agents absent from `latencies` take no time.
    """
    schedule: dict[str, tuple[float, float]] = {}
    for agent_id in mas.topological_order():
        start = max((schedule[p][1] for p in mas.predecessors(agent_id)), default=0.0)
        schedule[agent_id] = (start, start + latencies.get(agent_id, 0.0))
    return schedule


def critical_path_s(mas: MAS, latencies: Mapping[str, float]) -> float:
    """Modelled end-to-end latency: when the decision agent ends."""
    return modelled_schedule(mas, latencies)[mas.decision][1]
