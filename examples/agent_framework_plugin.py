"""A user's own sequential Agent Framework orchestration, made budget-aware by agentbalance, run offline.

The user wrote four agents (analyst, mathematician, reviewer, editor) in a SequentialBuilder, all on one strong
model. agentbalance keeps their names and instructions but decides, per task, which of them run, on which backbone,
and who reads whom, under a token-cost and latency budget; each task's system runs as an Agent Framework workflow.
Every call here is answered by the simulated world (no API calls); pass chat clients per backbone to go live.

Run:  .venv/bin/python examples/agent_framework_plugin.py              # trains a small controller first (~2 min)
      .venv/bin/python examples/agent_framework_plugin.py --model runs/af-plugin   # reuse a trained one
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from agent_framework import Agent
from agent_framework.openai import OpenAIChatCompletionClient
from agent_framework_orchestrations import SequentialBuilder

from agentbalance.adapters.agent_framework import BudgetAwareOrchestration, roles_from_orchestration
from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import ExperimentSpec
from agentbalance.splits import world_splits
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.worlds.simulated import SimulatedWorld

CRITICS = ("reviewer",)  # who checks the others' answers
DOMAINS = {"analyst": ("general",), "mathematician": ("math",)}  # what each agent is expert in
STRONG_BACKBONE = "qwen3-235b-a22b"  # the one model the user's orchestration was written for


def user_orchestration() -> SequentialBuilder:
    """The orchestration as the user wrote it: one client for all (built, never called here), four agents."""
    client = OpenAIChatCompletionClient(model=STRONG_BACKBONE, base_url="http://localhost:8000/v1", api_key="unused")
    agents = [
        Agent(
            client,
            "Work out what the question asks, recall the facts it turns on, and rule out options that contradict "
            "them. For lettered options end with a line `Answer: X`.",
            name="analyst",
            description="Recalls the facts and background a question turns on.",
        ),
        Agent(
            client,
            "Solve the quantitative part step by step, writing every intermediate value, and put the final "
            "answer in \\boxed{...}.",
            name="mathematician",
            description="Solves quantitative problems step by step.",
        ),
        Agent(
            client,
            "Check the answers above for factual, logical and arithmetic errors and say which one survives, "
            "in the format the question asks for.",
            name="reviewer",
            description="Checks the other agents' answers and says which survives.",
        ),
        Agent(
            client,
            "Give the one final answer, trusting the messages whose reasoning holds, in the format the question "
            "asks for.",
            name="editor",
            description="Gives the final answer.",
        ),
    ]
    return SequentialBuilder(participants=agents)


def train(out: Path, budget: Budget, seed: int) -> None:
    """A small controller on the orchestration's roles (cut down so it takes well under 2 minutes)."""
    roles = roles_from_orchestration(user_orchestration(), critics=CRITICS, domains=DOMAINS)
    experiment = ExperimentSpec(world="sim", sizes=(300, 100, 100), seed=seed)
    spec = BuildSpec(experiment, budget=budget, train=TrainConfig(epochs=8, pretrain_steps=200), restarts=1)
    test = build(spec, out, roles=roles).result.test
    print(f"  on its test split: Perf {100 * test.perf:.1f}%, Tok ${test.tok:.3f}/100q, Lat {test.lat:.1f} s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a run folder of a controller trained on these agents")
    parser.add_argument("--out", type=Path, default=Path("runs/af-plugin"), help="where to save a new one")
    parser.add_argument("--budget-tok", type=float, default=0.2, help="USD per 100 queries (expected)")
    parser.add_argument("--budget-lat", type=float, default=10.0, help="seconds per query (expected)")
    parser.add_argument("--tasks", type=int, default=100, help="held-out questions to run (both ways)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    world = SimulatedWorld(Catalog.load(), seed=args.seed)
    if args.model is None:
        print("training a controller on the orchestration's agents ...")
        train(args.out, Budget(args.budget_tok, args.budget_lat), args.seed)
    balanced = BudgetAwareOrchestration.from_run(
        args.model or args.out, user_orchestration(), world=world, critics=CRITICS, domains=DOMAINS
    )
    tasks = world_splits(world, (1, 1, args.tasks), seed=args.seed).test  # never trained on
    written = balanced.as_written(STRONG_BACKBONE)
    arms = {
        f"as written ({STRONG_BACKBONE} for all, {balanced.shape})": await balanced.runner.run_many(
            [(written, task) for task in tasks]
        ),
        "made budget-aware": await balanced.run_many(tasks),
    }
    for label, runs in arms.items():
        traces = [run.trace for run in runs]
        right = sum(bool(t.correct) for t in traces)
        tok = 100 * sum(t.cost_usd for t in traces) / len(traces)
        agents = sum(len(run.mas) for run in runs) / len(runs)
        lat = sum(t.latency_s for t in traces) / len(traces)
        print(f"{label}: {right}/{len(traces)} right, Tok ${tok:.3f}/100q, Lat {lat:.1f} s, {agents:.2f} agents")
    run = arms["made budget-aware"][0]
    print("one task's system:", ", ".join(f"{run.names[a.id]}@{a.backbone}" for a in run.mas.agents))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AgentBalanceError as error:  # a user error (bad --model folder, ...): its message, no traceback
        raise SystemExit(f"error: {error}") from None
