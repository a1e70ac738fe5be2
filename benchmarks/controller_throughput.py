"""Throughput of the controller on one core: batched greedy construction (query embeddings cached) and
synchronous training rollouts in a replay world.

Run: .venv/bin/python benchmarks/controller_throughput.py [--world DIR]
(writes benchmarks/results/controller_throughput.json)
Targets: >= 5,000 constructions/s; >= 2,000 MAS rollouts/s in a replay world.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder
from agentbalance.experiment import embed_queries
from agentbalance.policy.context import ControllerContext
from agentbalance.policy.controller import Controller
from agentbalance.pooling import build_pools
from agentbalance.roles import RoleSet
from agentbalance.runtime.rollout import rollout

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_WORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "mmlu-pro-dev"


def construction_rate(controller: Controller, embeddings: torch.Tensor, repeats: int = 3) -> float:
    """Queries per second of greedy construction, MAS objects included."""
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        systems = controller.construct(embeddings)
        best = max(best, len(systems) / (time.perf_counter() - started))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--world", type=Path, default=DEFAULT_WORLD, help="a replay-world folder")
    parser.add_argument("--queries", type=int, default=5000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    encoder = TextEncoder()
    result: dict[str, object] = {
        "command": "python benchmarks/controller_throughput.py",
        "machine": f"{platform.machine()}, Python {platform.python_version()}, 1 torch thread",
    }
    catalog = Catalog.load()
    context = ControllerContext.build(catalog, build_pools(catalog), RoleSet.load("mixed"), encoder)
    controller = Controller(context).eval()
    with torch.no_grad():
        for parameter in controller.gating.parameters():  # keep every agent: the largest MAS to build
            parameter.zero_()
        controller.gating.score[-1].bias.fill_(5.0)
    embeddings = torch.randn(args.queries, 384)
    embeddings = embeddings / embeddings.norm(dim=1, keepdim=True)
    result["construction_queries_per_s"] = round(construction_rate(controller, embeddings))
    result["construction_target"] = 5000
    if args.world.is_dir():
        from agentbalance.worlds.replay import ReplayWorld

        world = ReplayWorld.load(args.world)
        roles = RoleSet.load(world.default_roles)
        replay_context = ControllerContext.build(world.catalog, build_pools(world.calibrated_catalog()), roles, encoder)
        replay_controller = Controller(replay_context).eval()
        with torch.no_grad():  # keep every agent: the largest MAS to execute
            replay_controller.gating.score[-1].bias.fill_(5.0)
        queries = world.queries("train")[:2000]
        vectors = torch.stack(list(embed_queries(encoder, queries).values()))
        systems = replay_controller.construct(vectors)
        started = time.perf_counter()
        agents = 0
        for mas, query in zip(systems, queries, strict=True):
            agents += rollout(world, roles, mas, query).agents
        elapsed = time.perf_counter() - started
        result["replay_world"] = str(args.world.name)
        result["replay_rollouts_per_s"] = round(len(queries) / elapsed)
        result["replay_mean_agents_per_mas"] = round(agents / len(queries), 2)
        result["replay_rollout_target"] = 2000
    else:
        result["replay_world"] = f"skipped: {args.world} not found"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "controller_throughput.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
