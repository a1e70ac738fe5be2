"""The budget governor under a traffic shift: a controller built on one mix of questions, then served a stream of
costlier ones, without the governor (`serve`) and with it (`serve --budget-window N`).

For each world: build a controller (or reuse its run folder), pick the shifted stream (questions the build never
saw: the hardest third of a fresh draw in the simulator, the hardest, longest recorded questions outside the
training and validation splits in a replay world), serve it one request at a time, and report each window of N
requests (mean Tok, mean Lat, accuracy), the accuracy the governor gave up, and the best single backbone that fits
the budget on that stream: chosen on the stream itself (an oracle) and chosen on validation (what a user picks).

The replay world is served over HTTP (`query_id` names each recorded question), the whole path a client takes. The
simulator is served through the server's request handler in process (`ChatHandler.serve`, the code behind every
HTTP request): a question sent as text reaches the simulator without the gold answer and latent difficulty it
generated with it, so it could not be graded.
Run: .venv/bin/python benchmarks/governor_shift.py [--worlds sim,mmlu-pro-dev,...] [--window 100] [--requests 600]
(writes benchmarks/results/governor_shift.json; builds into runs/benchmark-governor/<world> unless present)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.experiment import ExperimentSpec, experiment_splits, resolve_world
from agentbalance.query import Query
from agentbalance.runtime.execution import Caps
from agentbalance.serve import ServedModel, ServeOptions, ServerThread, create_app
from agentbalance.serve.chat import ChatHandler, ServedRequest
from agentbalance.serve.protocol import Asked
from agentbalance.splits import synthetic_split
from agentbalance.train.build import BuildSpec, build
from agentbalance.trained import TrainedController
from agentbalance.worlds.base import RecordedWorld, World

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
RUNS = ROOT / "runs" / "benchmark-governor"
DATA = ROOT.parent / "shared" / "data"


@dataclass(frozen=True)
class Setting:
    """A world, the budget its controller is built for, its split sizes, and what else the stream shifts: the
    prices of a new era (every price times `price_factor`, the controller keeping the catalog it was built on), and
    the run folder of another setting when it serves that one's controller."""

    world: str
    budget: Budget
    sizes: tuple[int, int, int]
    price_factor: float = 1.0
    controller_of: str | None = None


SETTINGS = {
    "sim": Setting("sim", Budget(0.5, 60.0), (600, 200, 400)),  # the demo's build
    # built under 0.05 the controller spends 0.020 on test (a cascade escalating half the time): the slack
    # absorbs the shift; under 0.025 it is built with little slack, so the shift shows, as in production
    "mmlu-pro-dev": Setting(f"replay:{DATA / 'mmlu-pro-dev'}", Budget(tok=0.05), (600, 200, 400)),
    "mmlu-pro-dev-tight": Setting(f"replay:{DATA / 'mmlu-pro-dev'}", Budget(tok=0.025), (600, 200, 400)),
    # the same controller, its stream also in a new price era: every price doubled
    "mmlu-pro-dev-tight-2x-prices": Setting(
        f"replay:{DATA / 'mmlu-pro-dev'}", Budget(tok=0.025), (600, 200, 400), 2.0, "mmlu-pro-dev-tight"
    ),
}


def built(name: str, setting: Setting, seed: int) -> Path:
    """The world's controller, built once (a rerun reuses it; `build` resumes a killed one)."""
    out = RUNS / name
    if not (out / "metrics.json").is_file():
        spec = BuildSpec(ExperimentSpec(world=setting.world, sizes=setting.sizes, seed=seed), setting.budget)
        build(spec, out)
    return out


def shifted_stream(world: World, spec: ExperimentSpec, count: int) -> list[Query]:
    """Questions the build never saw, costlier than its mix, shuffled: in the simulator the hardest third (by the
    latent difficulty it generated them with) of a fresh draw past the test split; in a replay world the hardest
    third (by the share of recorded backbones that got them wrong) of the questions outside train and validation,
    the longest `count` of them."""
    if isinstance(world, RecordedWorld):
        splits = experiment_splits(spec, world, None)
        seen = {q.id for q in splits.train + splits.val}
        unseen = [q for name in ("train", "val", "test") for q in world.queries(name) if q.id not in seen]
        ranked = sorted(unseen, key=lambda q: world.solve_rate(q.id))  # type: ignore[attr-defined]
        hardest = ranked[: max(count, len(ranked) // 3)]
        chosen = sorted(hardest, key=lambda q: -len(q.render()))[:count]
    else:
        fresh = synthetic_split("test", spec.sizes[2] + 3 * count, spec.seed)[spec.sizes[2] :]
        chosen = sorted(fresh, key=lambda q: -float(q.metadata["difficulty"]))[:count]
    return random.Random(spec.seed).sample(chosen, len(chosen))  # in no order of cost: live traffic has none


def serve_replay(model: ServedModel, stream: list[Query], window: int | None) -> list[dict[str, Any]]:
    """Each recorded question asked over HTTP by its id, one at a time: cost, latency, grade, operating point."""
    import openai

    rows = []
    with ServerThread(create_app(model, ServeOptions(budget_window=window))) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=120)
        for query in stream:
            reply = client.chat.completions.create(
                model="agentbalance",
                messages=[{"role": "user", "content": query.question}],
                extra_body={"query_id": query.id},
            )
            rows.append(row_of(reply.model_extra["agentbalance"]))
    return rows


def serve_in_process(model: ServedModel, stream: list[Query], window: int | None) -> list[dict[str, Any]]:
    """Each question through the server's request handler, one at a time (the simulator needs the Query it
    generated, with its gold answer and latent difficulty, which text over HTTP would not carry)."""
    handler: ChatHandler = create_app(model, ServeOptions(budget_window=window)).state.handler
    served = model.serving(None)

    async def run() -> list[dict[str, Any]]:
        rows = []
        for query in stream:
            asked = Asked(query.question, (), None, None)
            _, trace, extra = await handler.serve(ServedRequest(asked, query, None, served, "agentbalance", "bench"))
            rows.append(row_of({"cost_usd": trace.cost_usd, "latency_s": trace.latency_s, "correct": trace.correct}
                               | extra))  # fmt: skip
        await handler.batcher.aclose()
        return rows

    return asyncio.run(run())


def row_of(details: dict[str, Any]) -> dict[str, Any]:
    point = details.get("governor", {}).get("operating_point", {})
    return {
        "tok": details["cost_usd"] * 100,
        "lat": details["latency_s"],
        "correct": details["correct"],
        "tok_scale": point.get("tok_scale", 1.0),
        "lat_scale": point.get("lat_scale", 1.0),
    }


def windows(rows: list[dict[str, Any]], size: int) -> list[dict[str, float]]:
    """Non-overlapping windows of `size` requests: mean Tok, mean Lat, accuracy, the operating point at the end."""
    out = []
    for start in range(0, len(rows) - size + 1, size):
        part = rows[start : start + size]
        graded = [r["correct"] for r in part if r["correct"] is not None]
        out.append(
            {
                "requests": f"{start + 1}-{start + size}",
                "tok": statistics.fmean(r["tok"] for r in part),
                "lat": statistics.fmean(r["lat"] for r in part),
                "accuracy": statistics.fmean(graded) if graded else float("nan"),
                "tok_scale_end": part[-1]["tok_scale"],
                "lat_scale_end": part[-1]["lat_scale"],
            }
        )
    return out


def singles(model: ServedModel, queries: list[Query], world: World) -> dict[str, dict[str, float]]:
    """Every backbone alone (the decision role, as the `single` baseline) on `queries`: mean Tok, Lat, accuracy."""
    from agentbalance.templates import single_mas

    roles = model.controller.roles
    runner = model.controller.runner(world, caps=Caps(), concurrency=32)
    table = {}
    for backbone in world.catalog.names:
        mas = single_mas(roles, backbone)
        traces = runner.run_sync([(mas, query) for query in queries])
        graded = [t.correct for t in traces if t.correct is not None]
        table[backbone] = {
            "tok": statistics.fmean(t.cost_usd * 100 for t in traces),
            "lat": statistics.fmean(t.latency_s for t in traces),
            "accuracy": statistics.fmean(graded) if graded else float("nan"),
        }
    return table


def best_fitting(table: dict[str, dict[str, float]], budget: Budget) -> str | None:
    """The most accurate backbone whose mean Tok and Lat fit `budget` in `table`."""
    fits = [
        name
        for name, row in table.items()
        if (budget.tok is None or row["tok"] <= budget.tok) and (budget.lat is None or row["lat"] <= budget.lat)
    ]
    return max(fits, key=lambda name: table[name]["accuracy"]) if fits else None


def measure(name: str, setting: Setting, window: int, count: int, seed: int) -> dict[str, Any]:
    owner = setting.controller_of or name
    run_dir = built(owner, SETTINGS[owner], seed)
    spec = ExperimentSpec(world=setting.world, sizes=setting.sizes, seed=seed)
    world, _, _, _ = resolve_world(spec)
    if setting.price_factor != 1.0:
        scaled = [
            b.model_copy(
                update={"price_in": b.price_in * setting.price_factor, "price_out": b.price_out * setting.price_factor}
            )
            for b in world.catalog
        ]
        world = world.with_catalog(Catalog(scaled, world.catalog.assumptions))  # type: ignore[attr-defined]
    encoder = TextEncoder(use_disk_cache=False)  # as `serve`'s: construction runs on a worker thread
    model = ServedModel(TrainedController.load(run_dir, encoder=encoder), world)  # its own catalog: prices unnoticed
    stream = shifted_stream(world, spec, count)
    serve = serve_replay if isinstance(world, RecordedWorld) else serve_in_process
    started = time.time()
    static = serve(model, stream, None)
    governed = serve(model, stream, window)
    served_s = time.time() - started
    on_stream = singles(model, stream, world)
    on_val = singles(model, experiment_splits(spec, world, None).val, world)
    oracle, practical = best_fitting(on_stream, setting.budget), best_fitting(on_val, setting.budget)
    axes = [axis for axis in ("tok", "lat") if getattr(setting.budget, axis) is not None]

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        per_window = windows(rows, window)
        after_first = per_window[1:]
        graded = [r["correct"] for r in rows if r["correct"] is not None]
        return {
            "windows": per_window,
            "accuracy": statistics.fmean(graded) if graded else None,
            "mean_tok": statistics.fmean(r["tok"] for r in rows),
            "mean_lat": statistics.fmean(r["lat"] for r in rows),
            "worst_window_after_the_first": {
                axis: max(w[axis] for w in after_first) / getattr(setting.budget, axis) for axis in axes
            },
            "every_window_after_the_first_within_5pct": all(
                w[axis] <= 1.05 * getattr(setting.budget, axis) for w in after_first for axis in axes
            ),
        }

    return {
        "world": name,
        "budget": {"tok": setting.budget.tok, "lat": setting.budget.lat},
        "run": str(run_dir.relative_to(ROOT)),
        "price_factor": setting.price_factor,
        "stream": {
            "requests": len(stream),
            "how": "hardest third by recorded wrong share, longest first, outside train and validation"
            if isinstance(world, RecordedWorld)
            else "hardest third by the simulator's latent difficulty, of a fresh draw past the test split",
        },
        "window": window,
        "served_seconds": round(served_s, 1),
        "static": summary(static),
        "governed": summary(governed),
        "single_best_on_stream": {"backbone": oracle, **(on_stream[oracle] if oracle else {})},
        "single_chosen_on_validation": {
            "backbone": practical,
            "on_validation": on_val.get(practical) if practical else None,
            "on_stream": on_stream.get(practical) if practical else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", default=",".join(SETTINGS))
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "governor_shift.json")
    args = parser.parse_args()
    results = []
    for name in args.worlds.split(","):
        setting = SETTINGS[name]
        if setting.world.startswith("replay:") and not Path(setting.world.removeprefix("replay:")).is_dir():
            print(f"skipped {name}: its replay world is not at {setting.world.removeprefix('replay:')}")
            continue
        print(f"{name}: building or loading, then serving {args.requests} requests twice", flush=True)
        results.append(measure(name, setting, args.window, args.requests, args.seed))
        print(json.dumps(results[-1]["static"]["windows"]), json.dumps(results[-1]["governed"]["windows"]), flush=True)
    document = {
        "command": "python benchmarks/governor_shift.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "load": os.getloadavg()},
        "results": results,
    }
    args.out.write_text(json.dumps(document, indent=2, default=lambda x: None if x != x else x) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
