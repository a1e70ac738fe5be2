"""Replay world: real recorded answers of real LLMs to real questions, combined by an explicit, swappable rule.

It must never let an agent see gold answers, correctness labels, scores or statistics of the val/test splits.

How a call is answered (the default rule, `WeightedVote`):

* An agent's own answer is the recorded answer of its backbone on the query. A multi-sample world (an
  optional `sample` column) records K answers per question and backbone: the call names which one
  (`AgentCall.sample`, the k-th agent of a MAS on a backbone reads sample k), wrapped to k mod K.
  The agent's answer, score, tokens, cost and latency all come from that sample.
* An agent with inputs combines its own answer with its predecessors' answers by a weighted vote.
  Each backbone m has a reliability r_m = (scored + 1) / (answered + 2): its Laplace-smoothed mean score
  (accuracy, on right/wrong tasks) on the TRAIN split only (a question counts once: `scored` adds the mean
  score of its samples). Its vote weight is w_m = max(0.05, logit(r_m) + log(K - 1)), with K the number of options
  (the query's choices; 10 for numeric answers; for choice-less letter questions the number of distinct
  letters making up at least 1% of the train-split recorded answers, a (question, backbone) weighing 1
  however many samples it has), the optimal weight of a voter that is right with probability r_m and
  otherwise wrong at random.
  The agent's own weight is multiplied by a role-dependent self-weight (solver 1.0, critic 1.5,
  decision 1.0: fields of `WeightedVote`). Empty answers abstain. The answer with the largest total
  weight wins; ties go to the answer with the largest single weight, then to the first answer string.
  The decision agent does the same over its inputs plus its own recorded answer.
* Worlds without recorded answers ("code": whether a backbone's solution passed the tests; "open": open-ended
  questions, a judge's score of each response in a `score` column, answered with the general role library)
  are selecting worlds: the agent SELECTS one solution or response (its own
  or one an input passed on) by the author's reliability x self-weight; its answer names the author
  ("solution:<backbone>", "#k" appended for its sample k > 0) and the author's recorded score of that sample
  is the outcome's.
* Score (the answer's quality in [0, 1]): each recorded answer's score is its `score` column where the
  world has one (a judge's quality; an empty cell: ungraded, the judge gave no rating), else its `correct` (1 or
  0). An ungraded recording gives an ungraded answer (None) and counts in no mean (reliability, accuracy).
  An agent's answer scores 1 or 0 against the gold answer where it is known; else it scores as the response
  that gave it: the agent's own recorded one when the vote chose its own answer, else the response passed on by
  the most reliable input that gave the chosen answer (None if none did). A backbone alone thus scores its
  recorded score.
* Tokens: completion = the recorded completion length of the agent's own backbone (its sample); prompt =
  `estimate_prompt_tokens` (role prompt + question, characters / 4) + the inputs' completion tokens.
  Cost: the recorded cost plus the extra upstream text at the input price, else catalog prices.
  Latency: the recorded `latency_s` when the world has it, else TTFT + completion / decode speed.
  No randomness: a call's result is a pure function of the recording, the split seed and the call.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from agentbalance.catalog import Backbone, Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.roles import RoleKind
from agentbalance.tasks.replay_questions import load_replay_questions
from agentbalance.worlds.base import AgentCall, Completion, Upstream, estimate_prompt_tokens
from agentbalance.worlds.replay_outcomes import number_samples, read_outcomes

WorldKind = Literal["mcq", "numeric", "code", "open"]
SELECTING_KINDS = ("code", "open")  # worlds whose agents select one recorded response instead of voting on answers
SPLITS = ("train", "val", "test")
NUMERIC_OPTIONS = 10  # K of the vote weight for free-form numeric answers
MIN_LETTER_SHARE = 0.01  # a letter counts as an option of choice-less MCQ if >= 1% of train answers
SOLUTION_PREFIX = "solution:"
_ROLES_OF_KIND: dict[str, str] = {"mcq": "general", "numeric": "math", "code": "code", "open": "general"}
Recording = tuple[int, int, int]  # where one recorded answer is: (question row, backbone column, sample)


# ----------------------------------------------------------------------------- the combination rule


@dataclass(frozen=True)
class Ballot:
    """One answer offered to a combination: whose it is and how reliable that backbone is on the train split."""

    answer: str | None  # None or "" abstains; in code worlds, "solution:<author>"
    backbone: str  # who vouches for it (code worlds: the solution's author)
    reliability: float  # Laplace-smoothed train-split mean score (accuracy), in (0, 1)
    own: bool = False  # the calling agent's own recorded answer
    sample: int = 0  # which recorded sample of `backbone` it is (code worlds: of the solution)


class CombinationRule(Protocol):
    """How an agent merges its own recorded answer with its inputs' answers; sees no gold, no test statistics."""

    def vote(self, ballots: Sequence[Ballot], kind: RoleKind, options: int) -> str | None:
        """The answer an agent of role `kind` gives, among `options` possible answers (None: all abstain)."""
        ...

    def select(self, ballots: Sequence[Ballot], kind: RoleKind) -> Ballot:
        """The one solution (code worlds) an agent of role `kind` passes on."""
        ...


@dataclass(frozen=True)
class WeightedVote:
    """The default rule: reliability-weighted vote (log-odds weights), the agent's own vote scaled by its role."""

    self_weight_solver: float = 1.0
    self_weight_critic: float = 1.5  # a critic trusts its own check more than what it reviews
    self_weight_decision: float = 1.0
    min_weight: float = 0.05  # a barely-better-than-chance backbone still counts a little, never negatively

    def self_weight(self, kind: RoleKind) -> float:
        weights = {
            RoleKind.SOLVER: self.self_weight_solver,
            RoleKind.CRITIC: self.self_weight_critic,
            RoleKind.DECISION: self.self_weight_decision,
        }
        return weights.get(kind, 1.0)

    def weight(self, ballot: Ballot, kind: RoleKind, options: int) -> float:
        """w = max(min_weight, logit(r) + log(K - 1)), times the self-weight for the agent's own ballot."""
        r = ballot.reliability
        w = max(self.min_weight, math.log(r / (1 - r)) + math.log(max(options, 2) - 1))
        return w * self.self_weight(kind) if ballot.own else w

    def vote(self, ballots: Sequence[Ballot], kind: RoleKind, options: int) -> str | None:
        totals: dict[str, float] = {}
        strongest: dict[str, float] = {}
        for ballot in ballots:
            if not ballot.answer:
                continue  # an empty answer abstains
            w = self.weight(ballot, kind, options)
            totals[ballot.answer] = totals.get(ballot.answer, 0.0) + w
            strongest[ballot.answer] = max(strongest.get(ballot.answer, 0.0), w)
        if not totals:
            return None
        return min(totals, key=lambda a: (-round(totals[a], 9), -round(strongest[a], 9), a))

    def select(self, ballots: Sequence[Ballot], kind: RoleKind) -> Ballot:
        def score(ballot: Ballot) -> float:
            return ballot.reliability * (self.self_weight(kind) if ballot.own else 1.0)

        return min(ballots, key=lambda b: (-round(score(b), 9), not b.own, b.backbone))


# ----------------------------------------------------------------------------- answers and splits


def _solution(author: str, sample: int) -> str:
    """The answer naming one recorded solution: "solution:<author>", with "#k" for a sample k > 0."""
    return f"{SOLUTION_PREFIX}{author}#{sample}" if sample else SOLUTION_PREFIX + author


def number_key(text: str) -> str | None:
    """Canonical form of a numeric answer ("65,960" -> "65960", "2.50" -> "2.5"); None if not a number."""
    cleaned = text.strip().replace(",", "").replace("$", "")
    if not cleaned:
        return None
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    canonical = format(value.normalize(), "f")
    return "0" if canonical in ("-0", "0") else canonical


def split_ranking(ids: Sequence[str], seed: int) -> np.ndarray:
    """Row indices ordered by sha256(f"{seed}:{id}"): a pure function of (ids, seed), not of file order."""
    return np.argsort([hashlib.sha256(f"{seed}:{i}".encode()).hexdigest() for i in ids], kind="stable")


def split_codes(ranking: np.ndarray, fractions: tuple[float, float, float]) -> np.ndarray:
    """0/1/2 (train/val/test) per row: the first rows of `ranking` train, the next validate, the rest test."""
    n = len(ranking)
    n_train = round(fractions[0] * n)
    n_val = min(n - n_train, round(fractions[1] * n))
    codes = np.full(n, 2, dtype=np.int8)
    codes[ranking[:n_train]] = 0
    codes[ranking[n_train : n_train + n_val]] = 1
    return codes


def _check_fractions(split: Sequence[float]) -> tuple[float, float, float]:
    values = tuple(float(x) for x in split)
    if len(values) != 3 or any(not math.isfinite(x) or x < 0 for x in values) or abs(sum(values) - 1) > 1e-6:
        raise AgentBalanceError(
            f"split must be three non-negative fractions (train, val, test) summing to 1, got {split}"
        )
    if values[0] <= 0:
        raise AgentBalanceError(
            f"split needs a non-empty train fraction (reliabilities are learned on it), got {split}"
        )
    return values  # type: ignore[return-value]


# ----------------------------------------------------------------------------- reading a folder


def _graded_score(value: float) -> float | None:
    """A recorded score as an answer's grade: None where the recording is ungraded (NaN)."""
    return None if math.isnan(value) else float(value)


def _world_kind(queries: Sequence[Query], recorded: pd.Series, judged: bool) -> WorldKind:
    """No choices, no gold and no recorded answers: open (open-ended questions whose responses a judge scored, a
    `score` column, and no code question) or code (programs graded by tests); numeric: no choices and numbers as
    answers; else mcq."""
    if any(q.choices for q in queries):
        return "mcq"
    golds = [q.answer for q in queries if q.answer]
    answers = recorded[recorded != ""]
    if not golds and answers.empty:
        return "open" if judged and not any(q.domain == "code" for q in queries) else "code"
    sample = golds or answers.unique().tolist()
    return "numeric" if all(number_key(a) is not None for a in sample) else "mcq"


# ----------------------------------------------------------------------------- the world


class ReplayWorld:
    """A replay-world folder in memory: dense (question x model) arrays for O(1) lookups, a seeded split."""

    simulated = False

    def __init__(
        self,
        folder: Path,
        catalog: Catalog,
        questions: list[Query],
        outcomes: pd.DataFrame,
        seed: int,
        split: tuple[float, float, float],
        rule: CombinationRule,
    ) -> None:
        self.folder = folder
        self.name = f"replay:{folder.name}"
        self.catalog = catalog
        self.questions = questions
        self.seed = seed
        self.split_fractions = split
        self.rule = rule
        outcomes_path = folder / "outcomes.csv.gz"
        self._question_index = {q.id: i for i, q in enumerate(questions)}
        self._model_names = list(catalog.names)
        self._model_index = {name: j for j, name in enumerate(self._model_names)}

        qi = pd.Index([q.id for q in questions]).get_indexer(outcomes["id"])
        mi = pd.Index(self._model_names).get_indexer(outcomes["model"])
        if (qi < 0).any():
            row = int(np.flatnonzero(qi < 0)[0])
            raise AgentBalanceError(
                f"{outcomes_path}: line {row + 2}: question id {outcomes['id'].iloc[row]!r} is not in questions.jsonl"
            )
        if (mi < 0).any():
            unknown = sorted(set(outcomes["model"][mi < 0]))
            raise AgentBalanceError(
                f"{outcomes_path}: model(s) {', '.join(unknown)} are not in {folder / 'models.yaml'} "
                f"(known: {', '.join(self._model_names)})"
            )
        n_q, n_m = len(questions), len(self._model_names)
        sample, counts = number_samples(outcomes, qi * n_m + mi, n_q * n_m, outcomes_path)
        unrecorded = [name for j, name in enumerate(self._model_names) if not (mi == j).any()]
        if unrecorded:
            raise AgentBalanceError(
                f"{folder / 'models.yaml'}: backbone(s) {', '.join(unrecorded)} have no outcome in {outcomes_path}"
            )

        self.kind: WorldKind = _world_kind(questions, outcomes["answer"], bool(outcomes.attrs.get("judged")))
        self.default_roles = _ROLES_OF_KIND[self.kind]
        answers = outcomes["answer"].to_numpy(dtype=object)
        if self.kind == "numeric":
            answers = np.array([number_key(a) or a for a in answers], dtype=object)
        # (question, backbone, sample) arrays, padded to the most samples any pair has; one sample: depth 1
        self._samples = counts.reshape(n_q, n_m)  # samples recorded per (question, backbone); 0: none
        self._present = self._samples > 0
        depth = int(self._samples.max())
        self._recorded = np.arange(depth) < self._samples[:, :, None]  # (q, m, s): sample s is recorded
        at = (qi, mi, sample)
        self._answers = np.full((n_q, n_m, depth), "", dtype=object)
        self._answers[at] = answers
        self._score = np.zeros((n_q, n_m, depth), dtype=np.float64)
        self._score[at] = outcomes["score"].to_numpy()
        self._tokens = np.zeros((n_q, n_m, depth), dtype=np.int64)
        self._tokens[at] = outcomes["completion_tokens"].to_numpy()
        self._cost = np.full((n_q, n_m, depth), np.nan)
        self._cost[at] = outcomes["cost_usd"].to_numpy()
        self._latency: np.ndarray | None = None
        if "latency_s" in outcomes.columns:
            self._latency = np.full((n_q, n_m, depth), np.nan)
            self._latency[at] = outcomes["latency_s"].to_numpy()
        # Statistics per (question, backbone) average over its samples, so a question counts once however
        # many samples it has (and a single-sample world's numbers are exactly the recorded ones). A score is NaN
        # where the recording is ungraded (an empty `score`: its judge gave no rating): means are over the graded
        # samples, NaN where a pair has none, and `_graded` marks the pairs that have one.
        per_pair = np.maximum(self._samples, 1)
        graded_samples = (~np.isnan(self._score) & self._recorded).sum(axis=2)
        self._graded = graded_samples > 0
        self._mean_score = np.where(
            self._graded, np.nansum(self._score, axis=2) / np.maximum(graded_samples, 1), np.nan
        )
        self._mean_tokens = self._tokens.sum(axis=2) / per_pair
        self._gold = [self._answer_key(q.answer) for q in questions]

        # Splits list their questions in this order too, so the first N of a split (`--train N`) is a
        # uniform sample of it, not the first domains of a file grouped by domain.
        self._ranking = split_ranking([q.id for q in questions], seed)
        self._split = split_codes(self._ranking, split)
        train = (self._split == 0)[:, None] & self._present
        # Reliability: Laplace-smoothed mean score on the TRAIN split only (never val/test), a question counting once
        # (and only where graded).
        graded_train = train & self._graded
        self._reliability = (np.where(graded_train, self._mean_score, 0.0).sum(axis=0) + 1.0) / (
            graded_train.sum(axis=0) + 2.0
        )
        self._letter_options = self._train_letter_count(train)

    @classmethod
    def load(
        cls,
        folder: str | Path,
        seed: int = 0,
        split: tuple[float, float, float] = (0.6, 0.2, 0.2),
        rule: CombinationRule | None = None,
    ) -> ReplayWorld:
        """Read questions.jsonl, outcomes.csv.gz and models.yaml once; every malformed file is a clear error."""
        folder = Path(folder)
        if not folder.is_dir():
            raise AgentBalanceError(f"replay world folder not found: {folder}")
        fractions = _check_fractions(split)
        for file in ("questions.jsonl", "outcomes.csv.gz", "models.yaml"):
            if not (folder / file).is_file():
                raise AgentBalanceError(f"replay world {folder}: missing file {folder / file}")
        questions = load_replay_questions(folder)
        outcomes = read_outcomes(folder / "outcomes.csv.gz")
        catalog = Catalog.load(folder / "models.yaml")
        return cls(folder.resolve(), catalog, questions, outcomes, seed, fractions, rule or WeightedVote())

    # ---- splits and calibration

    def split_ids(self, name: str) -> list[str]:
        """Question ids of split `name` (train, val or test), in the split's hash order: the same for the
        same seed whatever the file order, and any first N of them a uniform sample of the split."""
        return [q.id for q in self.queries(name)]

    def queries(self, name: str) -> list[Query]:
        """Queries of split `name`, in the split's hash order (see `split_ids`)."""
        in_split = self._ranking[self._split[self._ranking] == self._split_code(name)]
        return [self.questions[row] for row in in_split]

    def reliability(self, backbone: str) -> float:
        """The backbone's Laplace-smoothed mean score (accuracy) on the train split: what the combination rule may
        know."""
        return float(self._reliability[self._backbone_index(backbone)])

    def accuracy(self, backbone: str, split: str = "train") -> float:
        """The backbone's plain recorded mean score (0-1; on right/wrong tasks its accuracy) on a split, for
        calibration and reports: the mean over questions of the mean score of its samples there."""
        j = self._backbone_index(backbone)
        rows = (self._split == self._split_code(split)) & self._present[:, j]
        if not rows.any():
            raise AgentBalanceError(f"{self.name}: backbone {backbone!r} has no recorded outcome on the {split} split")
        rows &= self._graded[:, j]
        if not rows.any():
            raise AgentBalanceError(
                f"{self.name}: none of the answers of backbone {backbone!r} on the {split} split is graded (its "
                "`score` cells are empty: the judge gave no rating), so there is nothing to measure it by; grade them "
                "with another judge (record --judge)"
            )
        return float(self._mean_score[rows, j].mean())

    def calibrated_catalog(self, split: str = "train") -> Catalog:
        """The world's catalog calibrated on `split` (the paper's small local calibration): scores["replay"]
        = each backbone's recorded mean score (%), and its typical completion length = its recorded median,
        so TokCost and Lat reflect how much each backbone really writes (reasoning models differ 4x)."""
        backbones = [
            b.model_copy(
                update={
                    "scores": {**b.scores, "replay": 100 * self.accuracy(b.name, split)},
                    "typical_completion_tokens": self.median_completion_tokens(b.name, split),
                }
            )
            for b in self.catalog.backbones
        ]
        return Catalog(backbones, self.catalog.assumptions, source=self.catalog.source)

    def median_completion_tokens(self, backbone: str, split: str = "train") -> float:
        """The backbone's median recorded completion length on a split (at least 1 token): the median over
        questions of the mean length of its samples on each."""
        j = self._backbone_index(backbone)
        rows = (self._split == self._split_code(split)) & self._present[:, j]
        if not rows.any():
            raise AgentBalanceError(f"{self.name}: backbone {backbone!r} has no recorded outcome on the {split} split")
        return max(1.0, float(np.median(self._mean_tokens[rows, j])))

    def with_catalog(self, catalog: Catalog) -> ReplayWorld:
        """The same recording priced and timed by another catalog (say, today's prices); a subset is fine.

        Every backbone of `catalog` must be recorded in this world: an unrecorded one could not answer.
        """
        unrecorded = [name for name in catalog.names if name not in self._model_index]
        if unrecorded:
            raise AgentBalanceError(
                f"{catalog.source}: backbone(s) {', '.join(unrecorded)} have no recorded outcomes in {self.name} "
                f"(recorded: {', '.join(self._model_names)})"
            )
        world = copy.copy(self)  # the recorded arrays are shared: nothing ever writes to them
        world.catalog = catalog
        return world

    def resolve_query(self, query: Query) -> Query:
        """The recorded question that `query.id` names (a query file may give only ids), with the conversation
        `query` comes in, if any (the agents read it; the recorded answers cannot change with it)."""
        recorded = self.questions[self._query_row(query.id)]
        return recorded.model_copy(update={"context": query.context}) if query.context else recorded

    def solve_rate(self, query_id: str) -> float:
        """The mean score of this world's recorded backbones on the question (samples averaged; right/wrong: the
        share that answered it right): how hard it was for these models. For benchmarks that pick hard
        questions; no agent ever reads it."""
        row = self._query_row(query_id)
        graded = self._present[row] & self._graded[row]
        return float(self._mean_score[row][graded].mean()) if graded.any() else 0.5  # none graded: no information

    def samples(self, query_id: str, backbone: str) -> int:
        """How many samples of `backbone` are recorded on the question (1 without a `sample` column): the k-th
        agent of a MAS on that backbone reads sample k mod this."""
        return int(self._samples[self._query_row(query_id), self._backbone_index(backbone)])

    # ---- answering calls

    async def complete(self, call: AgentCall) -> Completion:
        """The World protocol; the work is CPU-only, so it is `answer` run inline."""
        return self.answer(call)

    def answer(self, call: AgentCall) -> Completion:
        """The agent's recorded answer, combined with its inputs' by the rule; usage from the recording."""
        qi = self._query_row(call.query.id)
        mi = self._backbone_index(call.backbone.name)
        if not self._present[qi, mi]:
            raise AgentBalanceError(
                f"{self.name}: no recorded outcome of backbone {call.backbone.name!r} on question {call.query.id!r}"
            )
        recording = (qi, mi, call.sample % int(self._samples[qi, mi]) if call.sample else 0)  # past K: wrap
        if self.kind in SELECTING_KINDS:
            answer, score, text = self._select_solution(call, recording)
        else:
            answer, score = self._vote(call, recording)
            text = f"Answer: {answer}" if answer is not None else "Answer: (none)"

        completion_tokens = int(self._tokens[recording])
        prompt_tokens = estimate_prompt_tokens(call)  # own prompt + the inputs' completions it reads
        upstream_tokens = sum(u.completion.completion_tokens for u in call.inputs)
        backbone = call.backbone
        recorded_cost = float(self._cost[recording])
        if math.isnan(recorded_cost):
            cost = backbone.call_cost_usd(prompt_tokens, completion_tokens)
        else:  # the recorded call read no upstream messages: add them at the input price
            cost = recorded_cost + backbone.call_cost_usd(upstream_tokens, 0)
        return Completion(
            text=text,
            answer=answer,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            latency_s=self._latency_s(backbone, recording, completion_tokens),
            reasoning_tokens=0,  # the recordings do not separate reasoning from answer tokens
            score=score,
        )

    def _vote(self, call: AgentCall, recording: Recording) -> tuple[str | None, float | None]:
        qi, mi, _ = recording
        own = self._answers[recording] or None
        if not call.inputs:
            return own, self._grade(call, recording, own)
        ballots = [Ballot(own, call.backbone.name, float(self._reliability[mi]), own=True)]
        ballots += [
            Ballot(self._answer_key(u.completion.answer), u.backbone.name, self.reliability(u.backbone.name))
            for u in call.inputs
        ]
        answer = self.rule.vote(ballots, call.role.kind, self._options(qi))
        return answer, self._grade(call, recording, answer)

    def _select_solution(self, call: AgentCall, recording: Recording) -> tuple[str, float | None, str]:
        qi, mi, sample = recording
        name = call.backbone.name
        ballots = [Ballot(_solution(name, sample), name, float(self._reliability[mi]), own=True, sample=sample)]
        for upstream in call.inputs:
            author, passed = self._author(upstream)
            ballots.append(Ballot(_solution(author, passed), author, self.reliability(author), sample=passed))
        chosen = self.rule.select(ballots, call.role.kind)
        author_index = self._backbone_index(chosen.backbone)
        if not self._present[qi, author_index]:
            raise AgentBalanceError(
                f"{self.name}: no recorded outcome of backbone {chosen.backbone!r} on question {call.query.id!r}"
            )
        sample = chosen.sample % int(self._samples[qi, author_index])
        return (
            _solution(chosen.backbone, sample),
            _graded_score(self._score[qi, author_index, sample]),
            f"{'Response' if self.kind == 'open' else 'Solution'} from {chosen.backbone}",
        )

    def _author(self, upstream: Upstream) -> tuple[str, int]:
        """Whose solution an input passes on, and which sample of it: what its answer names, else the input's
        own backbone (sample 0)."""
        answer = upstream.completion.answer or ""
        if answer.startswith(SOLUTION_PREFIX):
            named = answer[len(SOLUTION_PREFIX) :]
            if named in self._model_index:
                return named, 0
            author, _, sample = named.rpartition("#")
            if author in self._model_index and sample.isascii() and sample.isdigit():
                return author, int(sample)
        return upstream.backbone.name, 0

    def _grade(self, call: AgentCall, recording: Recording, answer: str | None) -> float | None:
        """The score of the answer an agent gives: 1 or 0 against the gold when known; else the score of the
        response that gave it, the agent's own recording (no answer: its abstention's) when the answer is its
        own, else the score passed on by the most reliable input that gave it (None if none did)."""
        gold = self._gold[recording[0]]
        if gold is not None:
            return float(answer == gold)
        if (self._answers[recording] or None) == answer:
            return _graded_score(self._score[recording])
        gave = [u for u in call.inputs if self._answer_key(u.completion.answer) == answer]
        return max(gave, key=lambda u: self.reliability(u.backbone.name)).completion.score if gave else None

    def _latency_s(self, backbone: Backbone, recording: Recording, completion_tokens: int) -> float:
        if self._latency is not None and not math.isnan(self._latency[recording]):
            return float(self._latency[recording])
        assumptions = self.catalog.assumptions
        ttft = backbone.ttft_s if backbone.ttft_s is not None else assumptions.ttft_s
        return ttft + completion_tokens / backbone.decode_speed(assumptions)

    def _options(self, qi: int) -> int:
        """K of the vote weights: the query's choices, 10 for numbers, else the train-split letter count."""
        choices = self.questions[qi].choices
        if choices:
            return len(choices)
        return NUMERIC_OPTIONS if self.kind == "numeric" else self._letter_options

    def _train_letter_count(self, train: np.ndarray) -> int:
        """The distinct letters of at least MIN_LETTER_SHARE of the train answers, each (question, backbone)
        weighing 1 however many samples it has (each sample 1/K)."""
        recorded = train[:, :, None] & self._recorded
        weights = np.broadcast_to(1.0 / np.maximum(self._samples, 1)[:, :, None], recorded.shape)[recorded]
        answers = self._answers[recorded]
        given = answers != ""
        if not given.any():
            return 2
        shares = pd.Series(weights[given]).groupby(answers[given]).sum() / weights[given].sum()
        return max(2, int((shares >= MIN_LETTER_SHARE).sum()))

    def _answer_key(self, answer: str | None) -> str | None:
        """How answers are compared: numbers canonicalised in numeric worlds, else stripped; empty -> None."""
        if answer is None or not answer.strip():
            return None
        if self.kind == "numeric":
            return number_key(answer) or answer.strip()
        return answer.strip()

    # ---- lookups with clear errors

    def _split_code(self, name: str) -> int:
        if name not in SPLITS:
            raise AgentBalanceError(f"unknown split {name!r}; known: {', '.join(SPLITS)}")
        return SPLITS.index(name)

    def _query_row(self, query_id: str) -> int:
        try:
            return self._question_index[query_id]
        except KeyError:
            raise AgentBalanceError(
                f"{self.name}: question id {query_id!r} is not recorded in {self.folder / 'questions.jsonl'}"
            ) from None

    def _backbone_index(self, name: str) -> int:
        try:
            return self._model_index[name]
        except KeyError:
            raise AgentBalanceError(
                f"{self.name}: backbone {name!r} has no recorded outcomes in {self.folder / 'outcomes.csv.gz'} "
                f"(recorded: {', '.join(self._model_names)})"
            ) from None

    def describe(self) -> dict[str, Any]:
        """Facts for reports: size, kind, split sizes."""
        return {
            "name": self.name,
            "questions": len(self.questions),
            "backbones": len(self._model_names),
            "kind": self.kind,
            "default_roles": self.default_roles,
            "split": {name: int((self._split == code).sum()) for code, name in enumerate(SPLITS)},
            "seed": self.seed,
        }
