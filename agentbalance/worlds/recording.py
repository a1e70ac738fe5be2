"""Record a replay world: every backbone of a world's catalog answers every question of a task alone, K times.

It must never leave a half-written file in the folder (temp file, then rename) nor write an API key or endpoint.

The folder is in the replay-world format (shared/data/README.md) with the optional `latency_s` column:

* questions.jsonl: id, domain, question, choices, answer (gold; null for code), source.
* outcomes.csv.gz: one row per (question, backbone, sample): the answer as the task reads it from the
  completion text ("" for code and for failures), correct (1 when the answer's score is at least `PASS_SCORE`:
  the world's own score where it knows it, else `task.score`; 0 when ungraded or failed), completion_tokens,
  cost_usd and latency_s as the world reported them (live: API usage at catalog prices, measured seconds of the
  successful call). With K > 1 samples (each sample k is the call of the k-th agent on the backbone: in a live
  world `seed` = k at the world's temperature, which must be above 0) a `sample` column numbers them; with K = 1
  it is omitted.
  A `score` column keeps the scores when some score is neither 0 nor 1 (a world that knows a judge's quality),
  empty where an answer could not be graded (no gold, and no judge or a judge that gave no rating: such an answer
  is ungraded, never a guess); right/wrong recordings of graded answers have none.
* models.yaml: the catalog's facts about each backbone (no `base_url`, no `api_key_env`: a replay world
  makes no calls), with the catalog's cost assumptions when they are not the defaults.

Every call is one agent with the neutral `SOLVER` role (below), so a recording measures backbones, not roles.
"""

from __future__ import annotations

import asyncio
import csv
import gzip
import io
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from agentbalance.catalog import Backbone, Catalog, CostAssumptions
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import Agent
from agentbalance.query import Query
from agentbalance.roles import Role, RoleKind
from agentbalance.tasks.base import Task
from agentbalance.worlds.base import AgentCall, AgentCallFailed, Completion, World, verdict

SOLVER = Role(
    name="Solver",
    kind=RoleKind.SOLVER,
    description="answers the question",
    prompt=(
        "Answer the question. Reason step by step where it helps, then give the final answer in the form the "
        "question needs: for a multiple-choice question, end with a line 'Answer: X' where X is the option "
        "letter; for a math or numeric question, put the final answer in \\boxed{...}; for a programming task, "
        "write the complete Python function in one ```python code block."
    ),
)
OUTCOME_HEADER = ("id", "model", "answer", "correct", "completion_tokens", "cost_usd", "latency_s")
SAMPLED_OUTCOME_HEADER = ("id", "model", "sample", *OUTCOME_HEADER[2:])  # K > 1 samples per (question, backbone)
Progress = Callable[[int, int, float], None]  # (calls done, calls in total, USD paid so far)


@dataclass(frozen=True)
class RecordSummary:
    """What a recording did: its size, what it cost, and what failed (a failed call is a wrong, empty row)."""

    out_dir: Path
    questions: int
    backbones: int
    calls: int
    failures: int
    cached: int  # calls served from a response cache (nothing paid for them now)
    ungraded: int  # calls whose answer could not be graded (no gold, no judge's rating): correct 0, score empty
    cost_usd: float  # as reported by the world (cached calls at their original cost)
    wall_s: float
    paid_usd: float = 0.0  # what this recording paid: its calls not served from a cache
    # per backbone, the mean score of its graded answers (failures: 0; NaN when none is graded)
    accuracy: dict[str, float] = field(default_factory=dict)
    failures_by_backbone: dict[str, int] = field(default_factory=dict)
    errors: tuple[str, ...] = ()  # the first few failure messages, for the user
    samples: int = 1  # calls per (question, backbone)
    # the spend cap (`max_usd_total`) stopped the recording: `questions` of `asked` were answered by every backbone
    # and written; `dropped` calls of unfinished questions were not (a response cache still holds them)
    capped: bool = False
    asked: int = 0
    dropped: int = 0


@dataclass(frozen=True)
class _Row:
    query: Query
    backbone: Backbone
    sample: int
    answer: str
    score: float  # 0 when failed; meaningless when not `graded` (written as an empty score)
    graded: bool
    completion_tokens: int
    cost_usd: float
    latency_s: float
    cached: bool = False
    error: str | None = None


async def record(
    world: World,
    task: Task,
    out_dir: Path,
    concurrency: int = 16,
    progress: Progress | None = None,
    samples: int = 1,
    concurrency_per_backbone: int | None = 1,
    max_usd_total: float | None = None,
    only: Collection[tuple[str, str, int]] | None = None,
) -> RecordSummary:
    """Ask every backbone of `world.catalog` each question of `task`, alone, `samples` times, and write a replay
    world to `out_dir`.

    User errors (AgentBalanceError: a rejected key, an unknown model) stop the recording and nothing is
    written; a failed call (AgentCallFailed, or an unexpected error of the world) becomes an empty,
    wrong row and is counted. `progress(done, total, paid_usd)` is called after each call.

    `max_usd_total` caps what the recording pays (calls served from a cache are free): once the paid spend reaches
    it, no call starts (calls in flight finish, so the cap is passed by at most their cost), and only the questions
    every backbone answered `samples` times are written, so the folder is a complete replay world of fewer
    questions. A rerun with a larger cap continues where a response cache holds the paid calls.

    `concurrency_per_backbone` (default 1) bounds each backbone's calls in flight, so a recorded latency is
    the server's service time, not its queue behind our own other calls (None: only `concurrency`).

    `only` (None: every question, backbone and sample) names the (question id, backbone, sample) answers to record;
    a question or a backbone with none is left out of the world (`record --task served` without --ask-missing: the
    answers a served log holds).
    """
    if concurrency < 1:
        raise AgentBalanceError(f"record: concurrency must be at least 1, got {concurrency}")
    if concurrency_per_backbone is not None and concurrency_per_backbone < 1:
        raise AgentBalanceError(f"record: concurrency_per_backbone must be at least 1, got {concurrency_per_backbone}")
    _check_samples(world, samples)
    if max_usd_total is not None and not max_usd_total > 0:
        raise AgentBalanceError(f"record: the spend cap must be a positive number of USD, got {max_usd_total}")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise AgentBalanceError(f"record: the output path {out_dir} exists and is not a folder")
    queries = list(task.items())
    if not queries:
        raise AgentBalanceError(f"record: task {task.name!r} has no question to record")
    planned = [
        (query, backbone, sample)
        for query in queries
        for backbone in world.catalog.backbones
        for sample in range(samples)
        if only is None or (query.id, backbone.name, sample) in only
    ]
    if not planned:
        raise AgentBalanceError(f"record: none of the answers asked for is a question of task {task.name!r}")
    per_question = Counter(query.id for query, _, _ in planned)
    queries = [query for query in queries if per_question[query.id]]
    asked_of = {backbone.name for _, backbone, _ in planned}
    backbones = tuple(backbone for backbone in world.catalog.backbones if backbone.name in asked_of)
    total = len(planned)
    limit = asyncio.Semaphore(concurrency)
    per_backbone = {
        backbone.name: asyncio.Semaphore(concurrency_per_backbone) if concurrency_per_backbone else limit
        for backbone in backbones
    }
    done, paid = 0, 0.0
    started = time.perf_counter()

    async def ask(query: Query, backbone: Backbone, sample: int) -> _Row | None:
        nonlocal done, paid
        async with per_backbone[backbone.name], limit:  # the backbone's turn first, then a slot of all calls
            if max_usd_total is not None and paid >= max_usd_total:
                return None  # over the cap: not asked
            row = await _ask(world, task, query, backbone, sample)
        done += 1
        paid += 0.0 if row.cached else row.cost_usd
        if progress is not None:
            progress(done, total, paid)
        return row

    jobs = [asyncio.ensure_future(ask(query, backbone, sample)) for query, backbone, sample in planned]
    try:
        answered = await asyncio.gather(*jobs)
    except BaseException:
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        raise
    wall_s = time.perf_counter() - started
    rows = [row for row in answered if row is not None]
    capped = len(rows) < total
    if capped:  # keep the questions every backbone answered every time: a complete world of fewer questions
        counts = Counter(row.query.id for row in rows)
        complete = [query for query in queries if counts[query.id] == per_question[query.id]]
        if not complete:
            raise AgentBalanceError(
                f"record: the spend cap of USD {max_usd_total:g} was reached (USD {paid:.4f} paid, {len(rows)} calls) "
                "before every backbone had answered any one question, so nothing was written; raise --max-usd-total"
            )
        kept = {query.id for query in complete}
        dropped = len(rows)
        rows = [row for row in rows if row.query.id in kept]
        dropped -= len(rows)
    else:
        complete, dropped = queries, 0

    out_dir.mkdir(parents=True, exist_ok=True)
    _write_atomic(out_dir / "questions.jsonl", _questions_jsonl(complete, task))
    _write_atomic(out_dir / "outcomes.csv.gz", _outcomes_csv_gz(rows, samples > 1))
    recorded = world.catalog.subset(b.name for b in backbones)
    _write_atomic(out_dir / "models.yaml", _models_yaml(world, recorded, len(complete), samples).encode())
    summary = _summary(out_dir, complete, backbones, rows, wall_s, samples)
    paid_usd = paid if capped else summary.paid_usd  # capped: the calls of the questions left out were paid too
    return replace(summary, capped=capped, asked=len(queries), dropped=dropped, paid_usd=paid_usd)


def _check_samples(world: World, samples: int) -> None:
    """K > 1 samples must be able to differ: not the simulator (one answer per question and backbone), and a
    live world only at a temperature above 0 (else K paid calls would repeat one answer)."""
    if samples < 1:
        raise AgentBalanceError(f"record: samples must be at least 1, got {samples}")
    if samples == 1:
        return
    if world.simulated:
        raise AgentBalanceError(
            f"record: {samples} samples per question need a world whose answers vary; the {world.name} world gives "
            "one answer per question and backbone (record it with 1 sample)"
        )
    temperature = getattr(world, "temperature", None)  # a live world's (judged or not); the others have none
    if hasattr(world, "temperature") and not (temperature is not None and temperature > 0):
        raise AgentBalanceError(
            f"record: {samples} samples per question need a temperature above 0 (--temperature T), got "
            f"{temperature}: at temperature 0 every sample would be the same answer, paid {samples} times"
        )


async def _ask(world: World, task: Task, query: Query, backbone: Backbone, sample: int) -> _Row:
    agent = Agent(id="solver", role=SOLVER.name, backbone=backbone.name)
    try:
        completion = await world.complete(AgentCall(agent, SOLVER, backbone, query, sample=sample))
    except AgentBalanceError:
        raise
    except AgentCallFailed as failure:
        return _Row(query, backbone, sample, "", 0.0, True, 0, failure.cost_usd, failure.latency_s, error=str(failure))
    except Exception as failure:  # a world bug: recorded like a failed call, never silent (as the runner does)
        error = f"{type(failure).__name__}: {failure}"
        return _Row(query, backbone, sample, "", 0.0, True, 0, 0.0, 0.0, error=error)
    answer = _answer(world, task, query, completion)
    score = completion.score if completion.score is not None else task.score(query, answer)
    return _Row(
        query,
        backbone,
        sample,
        "" if task.domain == "code" or answer is None else answer,
        0.0 if score is None else float(score),
        score is not None,
        completion.completion_tokens,
        completion.cost_usd,
        completion.latency_s,
        cached=completion.cached,
    )


def _answer(world: World, task: Task, query: Query, completion: Completion) -> str | None:
    """The task's reading of a real model's text; a simulator's own answer (its text only imitates a model)."""
    if world.simulated:
        return completion.answer
    return task.parse(completion.text, query)


def _questions_jsonl(queries: list[Query], task: Task) -> bytes:
    lines = []
    for query in queries:
        record = {
            "id": query.id,
            "domain": query.domain or task.domain,
            "question": query.question,
            "choices": list(query.choices) if query.choices else None,
            "answer": None if task.domain == "code" else query.answer,
            "source": str(query.metadata.get("source") or task.name),
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def _outcomes_csv_gz(rows: list[_Row], sampled: bool) -> bytes:
    """The outcome rows; a `sample` column only when there are several samples, a `score` column only when some
    score is neither 0 nor 1 or some answer is ungraded (an empty cell; right/wrong, one-sample files unchanged)."""
    scored = any(row.score not in (0.0, 1.0) or not row.graded for row in rows)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    header = SAMPLED_OUTCOME_HEADER if sampled else OUTCOME_HEADER
    writer.writerow((*header, "score") if scored else header)
    for row in rows:
        writer.writerow(
            (
                row.query.id,
                row.backbone.name,
                *((row.sample,) if sampled else ()),
                row.answer,
                int(bool(verdict(row.score))),
                row.completion_tokens,
                repr(float(row.cost_usd)),
                f"{row.latency_s:.4f}",
                *(((repr(row.score) if row.graded else ""),) if scored else ()),
            )
        )
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as archive:  # mtime 0: same rows, same bytes
        archive.write(text.getvalue().encode())
    return buffer.getvalue()


MODEL_KEYS = (
    "name",
    "family",
    "reasoning",
    "params_active_b",
    "params_total_b",
    "price_in",
    "price_out",
    "decode_tps",
    "scores",
)
# written when set (not their default); the live limits too, since the recorded completions were bounded by them
OPTIONAL_MODEL_KEYS = (
    "model",
    "request",
    "ttft_s",
    "instruct",
    "unanswered_share",
    "source",
    "max_tokens",
    "max_tokens_parameter",
    "context_tokens",
)


def _models_yaml(world: World, catalog: Catalog, questions: int, samples: int) -> str:
    entries: list[dict[str, Any]] = []
    for backbone in catalog.backbones:
        data = backbone.model_dump()
        entry = {key: data[key] for key in MODEL_KEYS}
        entry.update(
            {
                key: data[key]
                for key in OPTIONAL_MODEL_KEYS
                if data[key] != Backbone.model_fields[key].get_default(call_default_factory=True)
            }
        )
        entries.append(entry)
    document: dict[str, Any] = {"backbones": entries}
    if catalog.assumptions != CostAssumptions():
        document["assumptions"] = catalog.assumptions.model_dump()
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = (
        f"# Replay world recorded by agentbalance from the {world.name} world, {stamp}:\n"
        f"# {questions} questions x {len(entries)} backbones{f' x {samples} samples' if samples > 1 else ''}; "
        f"catalog {catalog.source}.\n"
        "# price_in / price_out: USD per 1M tokens. params_*_b: billions (null: not published).\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, flush it to disk, then rename over the target."""
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise AgentBalanceError(f"record: cannot write {path}: {error}") from None


def _summary(
    out_dir: Path, queries: list[Query], backbones: tuple[Backbone, ...], rows: list[_Row], wall_s: float, samples: int
) -> RecordSummary:
    per_backbone: dict[str, list[_Row]] = {b.name: [] for b in backbones}
    for row in rows:
        per_backbone[row.backbone.name].append(row)
    failed = [row for row in rows if row.error is not None]
    return RecordSummary(
        out_dir=out_dir,
        questions=len(queries),
        backbones=len(backbones),
        calls=len(rows),
        failures=len(failed),
        cached=sum(row.cached for row in rows),
        ungraded=sum(not row.graded for row in rows),
        cost_usd=sum(row.cost_usd for row in rows),
        wall_s=wall_s,
        paid_usd=sum(row.cost_usd for row in rows if not row.cached),
        accuracy={name: _mean_graded(own) for name, own in per_backbone.items()},
        failures_by_backbone={name: sum(r.error is not None for r in own) for name, own in per_backbone.items()},
        errors=tuple(str(row.error) for row in failed[:5]),
        samples=samples,
    )


def _mean_graded(rows: list[_Row]) -> float:
    graded = [row.score for row in rows if row.graded]
    return sum(graded) / len(graded) if graded else float("nan")
