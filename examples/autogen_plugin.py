"""A user's own 4-agent AutoGen team, made budget-aware by agentbalance, run offline on the simulated world.

The user wrote four AssistantAgents (researcher, skeptic, calculator, final answerer) that all talk to one
strong model. agentbalance keeps their roles and prompts but decides, per task, which of them run, on
which backbone, and who reads whom, under a token-cost and latency budget; AutoGen still runs them.

Run:  .venv/bin/python examples/autogen_plugin.py                 # trains a small controller first (< 2 min)
      .venv/bin/python examples/autogen_plugin.py --model runs/autogen-plugin   # reuse a trained one
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import ChatCompletionClient

from agentbalance.adapters.autogen import AgentBalanceTeam, BalancedRun, roles_from_agents
from agentbalance.budgets import Budget
from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.experiment import ExperimentSpec
from agentbalance.mas import MAS, Agent
from agentbalance.query import Query
from agentbalance.splits import world_splits
from agentbalance.train.build import BuildSpec, build
from agentbalance.train.config import TrainConfig
from agentbalance.worlds.simulated import SimulatedWorld

DECISION = "final_answerer"
CRITICS = ("skeptic",)
DOMAINS = {"researcher": ("general",), "calculator": ("math",)}  # what each agent is expert in
STRONG_BACKBONE = "qwen3-235b-a22b"  # the one model the user's team was written for


def user_agents(model_client: ChatCompletionClient) -> list[AssistantAgent]:
    """The team as the user wrote it: their names, descriptions and system messages."""
    return [
        AssistantAgent(
            "researcher",
            model_client=model_client,
            description="Recalls the facts and background knowledge a question turns on.",
            system_message=(
                "You are a careful researcher. Recall the facts the question depends on, reason briefly, and "
                "rule out options that contradict them. For lettered options end with a line `Answer: X`."
            ),
        ),
        AssistantAgent(
            "skeptic",
            model_client=model_client,
            description="Checks the other agents' answers for errors and says which one survives.",
            system_message=(
                "You are a skeptic. Check each answer you are shown for factual, logical and arithmetic errors, "
                "say which answer survives your checks, and give it in the format the question asks for."
            ),
        ),
        AssistantAgent(
            "calculator",
            model_client=model_client,
            description="Solves quantitative problems step by step and double-checks the arithmetic.",
            system_message=(
                "You solve quantitative problems: write every intermediate quantity, compute carefully and "
                "re-check each step. Put the final answer in \\boxed{...}."
            ),
        ),
        AssistantAgent(
            DECISION,
            model_client=model_client,
            description="Reads the team's messages and gives the one final answer.",
            system_message=(
                "You give the team's final answer. Weigh the other agents' messages, trust the ones whose "
                "reasoning holds, and answer in the format the question asks for."
            ),
        ),
    ]


def users_model_client() -> ChatCompletionClient:
    """What the user's team talked to before: one OpenAI-compatible endpoint. Built, never called here."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    return OpenAIChatCompletionClient(
        model=STRONG_BACKBONE,
        base_url="http://localhost:8000/v1",
        api_key="not-used-offline",
        model_info={
            "vision": False,
            "function_calling": False,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )


def as_written(roles: list[str], backbone: str = STRONG_BACKBONE) -> MAS:
    """The user's team as written: every agent reads every earlier one (complete DAG), one backbone for all."""
    agents = [Agent(id=f"u{i}", role=role, backbone=backbone) for i, role in enumerate(roles)]
    edges = [(a.id, b.id) for i, a in enumerate(agents) for b in agents[i + 1 :]]
    return MAS(agents, edges, agents[-1].id)


def train(agents: list[AssistantAgent], out: Path, budget: Budget, seed: int) -> None:
    """A small controller on the user's roles (sizes and epochs cut down so it takes well under 2 minutes)."""
    roles = roles_from_agents(agents, DECISION, CRITICS, DOMAINS)
    spec = BuildSpec(
        ExperimentSpec(world="sim", sizes=(300, 100, 100), seed=seed),
        budget=budget,
        # a mild starting penalty, so a short training still explores the stronger backbones
        train=TrainConfig(epochs=8, pretrain_steps=200, initial_kappa=0.05),
        restarts=1,
    )
    started = time.perf_counter()

    def stage(name: str) -> None:
        print(f"  [{time.perf_counter() - started:5.1f} s] {name}")

    built = build(spec, out, roles=roles, on_stage=stage)
    test = built.result.test
    print(
        f"  trained in {time.perf_counter() - started:.0f} s; on its test split: Perf {100 * test.perf:.1f}%, "
        f"Tok ${test.tok:.3f} per 100 queries, Lat {test.lat:.1f} s per query"
    )


def describe(run: BalancedRun) -> str:
    agents = ", ".join(f"{run.names[a.id]}@{a.backbone}" for a in run.mas.agents)
    edges = ", ".join(f"{run.names[s]}->{run.names[t]}" for s, t in run.mas.edges) or "no edges"
    return f"{agents} | {edges}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a run folder of a controller trained on these agents")
    parser.add_argument("--out", type=Path, default=Path("runs/autogen-plugin"), help="where to save a new one")
    parser.add_argument("--budget-tok", type=float, default=0.2, help="USD per 100 queries (expected)")
    parser.add_argument("--budget-lat", type=float, default=10.0, help="seconds per query (expected)")
    parser.add_argument("--tasks", type=int, default=100, help="held-out questions to run (both ways)")
    parser.add_argument("--show", type=int, default=6, help="how many of them to print one by one")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    agents = user_agents(users_model_client())
    world = SimulatedWorld(Catalog.load(), seed=args.seed)
    print(f"world: {world.name} (a calibrated simulator of the catalog's backbones; no API calls)")
    model = args.model
    if model is None:
        print(f"training a controller on the roles {[a.name for a in agents]} ...")
        train(agents, args.out, Budget(args.budget_tok, args.budget_lat), args.seed)
        model = args.out
    team = AgentBalanceTeam.from_run(model, agents, DECISION, world=world, critics=CRITICS, domains=DOMAINS)

    tasks: list[Query] = world_splits(world, (1, 1, args.tasks), seed=args.seed).test  # never trained on
    runs = await team.run_many(tasks)
    written = await asyncio.gather(*(team.run_mas(as_written(team.roles.names), task) for task in tasks))
    for task, run in list(zip(tasks, runs, strict=True))[: args.show]:
        t = run.trace
        mark = {True: "right", False: "wrong", None: "?"}[t.correct]
        print(f"\n{task.id} ({task.domain}): {task.question[:90]}")
        print(f"  MAS: {describe(run)}")
        print(f"  answer {t.answer!r} ({mark}); cost ${t.cost_usd:.5f}; latency {t.latency_s:.1f} s")
    for label, results in (("with agentbalance", runs), (f"as written ({STRONG_BACKBONE}, complete)", written)):
        traces = [r.trace for r in results]
        right = sum(bool(t.correct) for t in traces)
        tok = 100 * sum(t.cost_usd for t in traces) / len(traces)
        lat = sum(t.latency_s for t in traces) / len(traces)
        print(f"\n{label}: {right}/{len(traces)} right, Tok ${tok:.3f} per 100 queries, Lat {lat:.1f} s per query")

    free = await team.run("A train travels 120 km in 1.5 hours. What is its average speed in km/h?")
    print(
        f"\nfree text: {describe(free)}\n  answer {free.answer!r}; cost ${free.trace.cost_usd:.5f}; "
        f"latency {free.trace.latency_s:.1f} s (free text: the simulator has no real answer, nor a gold one to grade)"
    )


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AgentBalanceError as error:  # a user error (bad --model folder, ...): its message, no traceback
        raise SystemExit(f"error: {error}") from None
