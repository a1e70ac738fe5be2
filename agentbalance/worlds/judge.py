"""An LLM judge: a quality in [0, 1] for an answer that has no gold answer to compare with.

The judge is one backbone answering a rubric (single-answer grading on a 1-10 scale by default, the way
MT-Bench grades; against the reference answer when the question has one; or a user's rubric file). It runs in
its own world, at temperature 0, so its calls are cached like every live call and its cost is counted apart
from the system it grades (grading is not part of what is served). A verdict that names no rating on the
rubric's scale is no grade (`None`), never a guess.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from agentbalance.catalog import Backbone
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import Agent
from agentbalance.query import Query
from agentbalance.roles import Role, RoleKind
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion, World, WrappedWorld

PLACEHOLDERS = frozenset({"question", "answer", "reference"})


@dataclass(frozen=True)
class Rubric:
    """What the judge is told: a system prompt, and a user prompt with {question}, {answer} and optionally
    {reference}; its verdict is a rating from `low` to `high`, mapped linearly onto [0, 1]."""

    name: str
    system: str
    prompt: str
    low: float = 1
    high: float = 10

    def __post_init__(self) -> None:
        fields = {name for _, name, _, _ in string.Formatter().parse(self.prompt) if name is not None}
        missing, unknown = {"question", "answer"} - fields, fields - PLACEHOLDERS
        if missing or unknown:
            problems = [f"it lacks {{{name}}}" for name in sorted(missing)]
            problems += [f"{{{name}}} is not one of {sorted(PLACEHOLDERS)}" for name in sorted(unknown)]
            raise AgentBalanceError(f"rubric {self.name}: its prompt is not usable: {'; '.join(problems)}")
        if not self.high > self.low:
            raise AgentBalanceError(f"rubric {self.name}: its scale must rise, got {self.low} to {self.high}")

    @property
    def uses_reference(self) -> bool:
        return "{reference}" in self.prompt

    def messages(self, question: str, answer: str, reference: str | None) -> list[dict[str, str]]:
        text = self.prompt.format(question=question, answer=answer, reference=reference or "")
        return [{"role": "system", "content": self.system}, {"role": "user", "content": text}]

    def score(self, verdict: str) -> float | None:
        """The verdict's rating on [0, 1]; None when it names none on the scale."""
        rating = parse_rating(verdict)
        if rating is None or not self.low <= rating <= self.high:
            return None
        return (rating - self.low) / (self.high - self.low)


_ANSWER_FRAME = "[The start of the assistant's answer]\n{answer}\n[The end of the assistant's answer]"
_RATING_ASKED = (
    "First explain your assessment in a few sentences. Then rate the answer on a scale of 1 to 10, strictly in "
    'this form: "Rating: [[N]]", for example "Rating: [[6]]".'
)
SINGLE_ANSWER = Rubric(
    name="single-answer",
    system=(
        "You are an impartial judge of how good an AI assistant's answer to a user's question is. Weigh how "
        "helpful, relevant, accurate, deep and clear it is, and whether it does what was asked. Be objective: "
        "an answer is not better for being longer. " + _RATING_ASKED
    ),
    prompt="[Question]\n{question}\n\n" + _ANSWER_FRAME,
)
WITH_REFERENCE = Rubric(
    name="with-reference",
    system=(
        "You are an impartial judge of how good an AI assistant's answer to a user's question is. You are given a "
        "reference answer, which is right: compare the assistant's answer with it, and name its mistakes. Be "
        "objective: an answer is not better for being longer. " + _RATING_ASKED
    ),
    prompt=(
        "[Question]\n{question}\n\n[The start of the reference answer]\n{reference}\n[The end of the reference "
        "answer]\n\n" + _ANSWER_FRAME
    ),
)

_BRACKETED = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")
_LABELLED = re.compile(r"\b(?:rating|score)\s*(?:is|:|=)\s*\[?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_OUT_OF = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:/|out of)\s*10\b", re.IGNORECASE)


def parse_rating(verdict: str) -> float | None:
    """The rating a verdict gives: its last "[[N]]", else its last "Rating: N" (or "Score: N"), else its last
    "N/10" ("N out of 10"); None when it states none. (The last: a judge that reconsiders ends with its verdict.)"""
    for pattern in (_BRACKETED, _LABELLED, _OUT_OF):
        found = pattern.findall(verdict)
        if found:
            return float(found[-1])
    return None


def load_rubric(path: Path) -> Rubric:
    """A user's rubric: a YAML file with `system` and `prompt` (with {question}, {answer}, optionally {reference})
    and optionally `scale: [LOW, HIGH]` (default [1, 10]); the prompt must ask for a rating that `parse_rating`
    reads, e.g. "Rating: [[N]]"."""
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise AgentBalanceError(f"rubric {path}: cannot read it: {error}") from None
    if not isinstance(document, dict):
        raise AgentBalanceError(f"rubric {path}: expected a mapping with `system` and `prompt`")
    unknown = set(document) - {"system", "prompt", "scale"}
    if unknown:
        raise AgentBalanceError(f"rubric {path}: unknown keys {sorted(unknown)} (known: system, prompt, scale)")
    texts = {key: document.get(key) for key in ("system", "prompt")}
    for key, value in texts.items():
        if not isinstance(value, str) or not value.strip():
            raise AgentBalanceError(f"rubric {path}: `{key}` must be a non-empty text")
    scale = document.get("scale", [1, 10])
    if not (isinstance(scale, list) and len(scale) == 2 and all(isinstance(v, int | float) for v in scale)):
        raise AgentBalanceError(f"rubric {path}: `scale` must be [LOW, HIGH], two numbers, got {scale!r}")
    return Rubric(str(path), str(texts["system"]), str(texts["prompt"]), float(scale[0]), float(scale[1]))


@dataclass(frozen=True)
class Verdict:
    """One judged answer: its quality (None: ungraded, with `error` saying why) and what the judging cost."""

    score: float | None
    text: str
    cost_usd: float
    cached: bool = False
    error: str | None = None


@dataclass
class JudgeStats:
    """The judge's own accounting, apart from the judged system's."""

    calls: int = 0
    cached: int = 0
    failed: int = 0  # calls that produced no verdict
    unparsable: int = 0  # verdicts with no rating on the scale
    cost_usd: float = 0.0  # every call's cost (cached calls at their original cost)
    paid_usd: float = 0.0  # what was paid now: the calls not served from the cache

    def describe(self) -> str:
        problems = self.failed + self.unparsable
        ungraded = f", {self.failed} failed, {self.unparsable} without a rating" if problems else ""
        return (
            f"judge: {self.calls} calls ({self.cached} from the cache){ungraded}, USD {self.cost_usd:.4f} "
            f"(USD {self.paid_usd:.4f} paid now)"
        )


@dataclass(frozen=True)
class JudgeCall(AgentCall):
    """A judge's call: the rubric's messages as they are, not an agent's prompt built from a role and a query."""

    rubric_messages: tuple[tuple[str, str], ...] = ()

    @property
    def messages(self) -> list[dict[str, str]]:  # type: ignore[override]
        return [{"role": role, "content": content} for role, content in self.rubric_messages]


@dataclass
class Judge:
    """Grades answers with one backbone of `world` (a world of its own, so that its calls are counted apart).

    `rubric` None: `WITH_REFERENCE` for a question that has an answer to compare with, else `SINGLE_ANSWER`."""

    world: World
    backbone: Backbone
    rubric: Rubric | None = None
    stats: JudgeStats = field(default_factory=JudgeStats)

    def __post_init__(self) -> None:
        temperature = getattr(self.world, "temperature", 0.0)
        if temperature not in (None, 0, 0.0):
            raise AgentBalanceError(f"the judge answers at temperature 0 (got {temperature}): a grade must not vary")

    def rubric_for(self, query: Query) -> Rubric:
        if self.rubric is not None:
            return self.rubric
        return WITH_REFERENCE if query.answer else SINGLE_ANSWER

    async def grade(self, query: Query, answer: str) -> Verdict:
        """Judge `answer` to `query` (against `query.answer` where the rubric uses a reference). A call that fails
        or a verdict without a rating is an ungraded `Verdict` (score None); a user error (a refused key, an
        unknown model) is raised."""
        rubric = self.rubric_for(query)
        asked = "\n\n".join([*(turn.render() for turn in query.context), query.render()])  # with its conversation
        messages = rubric.messages(asked, answer, query.answer)
        role = Role(name="Judge", kind=RoleKind.CRITIC, description="grades an answer", prompt=rubric.system)
        call = JudgeCall(
            agent=Agent(id="judge", role=role.name, backbone=self.backbone.name),
            role=role,
            backbone=self.backbone,
            # the whole judging text as one question without a conversation, so a context window is checked
            # against what is sent (and nothing is cut from it: a prompt too long fails the call)
            query=Query(id=query.id, question=messages[-1]["content"]),
            rubric_messages=tuple((m["role"], m["content"]) for m in messages),
        )
        self.stats.calls += 1
        try:
            completion = await self.world.complete(call)
        except AgentCallFailed as failure:
            self.stats.failed += 1
            self.stats.cost_usd += failure.cost_usd
            self.stats.paid_usd += failure.cost_usd
            return Verdict(None, "", failure.cost_usd, error=f"the judge's call failed: {failure}")
        self.stats.cached += completion.cached
        self.stats.cost_usd += completion.cost_usd
        self.stats.paid_usd += 0.0 if completion.cached else completion.cost_usd
        score = rubric.score(completion.text)
        if score is None:
            self.stats.unparsable += 1
            error = f"the verdict gives no rating from {rubric.low:g} to {rubric.high:g}"
            return Verdict(None, completion.text, completion.cost_usd, completion.cached, error)
        return Verdict(score, completion.text, completion.cost_usd, completion.cached)


@dataclass
class JudgedWorld(WrappedWorld):
    """A world whose every answer is graded by a judge: the completion's `score` is the judge's verdict (None when
    it gives none), the one grade every execution path reads (`runtime.execution.grade`). The judge's calls go to
    its own world, so `judge.stats` holds their cost apart from the answers'."""

    answering: World
    judge: Judge

    async def complete(self, call: AgentCall) -> Completion:
        completion = await self.answering.complete(call)
        verdict = await self.judge.grade(call.query, completion.text)
        return replace(completion, score=verdict.score)
