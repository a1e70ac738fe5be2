"""Measure the simulated world against the real recordings: calibration, error correlation, vote gain,
reasoning gain by difficulty, token multiplier, role fit, misleading and repair.

Run: .venv/bin/python benchmarks/studies/simulated_world_realism.py
(writes benchmarks/studies/results/simulated_world_realism.json; the real-side numbers come from
benchmarks/studies/results/replay_stats.json)
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from agentbalance.catalog import Catalog
from agentbalance.mas import Agent
from agentbalance.query import DOMAINS, Query
from agentbalance.roles import Role, RoleSet
from agentbalance.worlds.base import AgentCall, Completion, Upstream
from agentbalance.worlds.simulated import SimulatedWorld
from agentbalance.worlds.simulated.questions import generate_synthetic

RESULTS = Path(__file__).resolve().parent / "results"
AGENT = Agent(id="a", role="agent", backbone="agent")


def answers(
    world: SimulatedWorld,
    backbone: str,
    role: Role,
    queries: Sequence[Query],
    inputs: Callable[[Query], list[Upstream]] = lambda query: [],
) -> list[Completion]:
    calls = [AgentCall(AGENT, role, world.catalog[backbone], q, inputs(q)) for q in queries]

    async def run() -> list[Completion]:
        return list(await asyncio.gather(*(world.complete(call) for call in calls)))

    return asyncio.run(run())


def hit_rate(completions: Sequence[Completion]) -> float:
    return float(np.mean([c.correct for c in completions]))


def calibration(world: SimulatedWorld, items: dict[str, list[Query]], roles: dict[str, RoleSet]) -> dict[str, object]:
    gaps = {}
    for domain in DOMAINS:
        for backbone in world.catalog:
            measured = 100 * hit_rate(answers(world, backbone.name, roles[domain].decision, items[domain]))
            gaps[f"{backbone.name}/{domain}"] = round(measured - 100 * world.published_score(backbone, domain), 2)
    return {"max_abs_gap_points": max(abs(v) for v in gaps.values()), "gap_points": gaps}


def correlation_and_votes(world: SimulatedWorld, queries: Sequence[Query], role: Role) -> dict[str, float]:
    names = world.catalog.names
    results = {name: answers(world, name, role, queries) for name in names}
    errors = np.array([[not c.correct for c in results[name]] for name in names], float)
    pairs = list(itertools.combinations(range(len(names)), 2))
    phis = [np.corrcoef(errors[i], errors[j])[0, 1] for i, j in pairs]
    difficulty = np.array([q.metadata["difficulty"] for q in queries])
    edges = np.quantile(difficulty, np.linspace(0, 1, 6))
    within = []
    for low, high in itertools.pairwise(edges):
        rows = (difficulty >= low) & (difficulty <= high)
        for i, j in pairs:
            if errors[i, rows].std() > 0 and errors[j, rows].std() > 0:
                within.append(np.corrcoef(errors[i, rows], errors[j, rows])[0, 1])
    gold = [q.answer for q in queries]
    accuracy = {name: np.mean([c.answer == g for c, g in zip(results[name], gold, strict=True)]) for name in names}
    gains = []
    for group in itertools.combinations(names, 3):
        ranked = sorted(group, key=lambda name: -accuracy[name])
        hits = 0
        for k, truth in enumerate(gold):
            picks = [results[name][k].answer for name in ranked]
            hits += max(picks, key=lambda a: (picks.count(a), -picks.index(a))) == truth
        gains.append(hits / len(gold) - accuracy[ranked[0]])
    return {
        "error_phi_median": float(np.median(phis)),
        "error_phi_q25": float(np.quantile(phis, 0.25)),
        "error_phi_q75": float(np.quantile(phis, 0.75)),
        "error_phi_within_difficulty_bins_mean": float(np.mean(within)),
        "vote_gain_k3_median": float(np.median(gains)),
        "vote_gain_k3_q25": float(np.quantile(gains, 0.25)),
        "vote_gain_k3_q75": float(np.quantile(gains, 0.75)),
    }


def reasoning(world: SimulatedWorld, queries: Sequence[Query], role: Role) -> dict[str, object]:
    difficulty = np.array([q.metadata["difficulty"] for q in queries])
    terciles = np.quantile(difficulty, [1 / 3, 2 / 3])
    bins = {
        "easy": difficulty <= terciles[0],
        "medium": (difficulty > terciles[0]) & (difficulty < terciles[1]),
        "hard": difficulty >= terciles[1],
    }
    table: dict[str, object] = {}
    plain_tokens, think_tokens = [], []
    for size in ("qwen3-1.7b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b"):
        plain, thinking = answers(world, size, role, queries), answers(world, f"{size}-think", role, queries)
        plain_ok = np.array([c.correct for c in plain], float)
        think_ok = np.array([c.correct for c in thinking], float)
        table[size] = {name: round(float(think_ok[m].mean() - plain_ok[m].mean()), 4) for name, m in bins.items()}
        plain_tokens += [c.completion_tokens for c in plain]
        think_tokens += [c.completion_tokens for c in thinking]
    hard_easy = {
        "reasoning": float(
            np.median(np.array(think_tokens).reshape(6, -1)[:, bins["hard"]])
            / np.median(np.array(think_tokens).reshape(6, -1)[:, bins["easy"]])
        ),
        "non_reasoning": float(
            np.median(np.array(plain_tokens).reshape(6, -1)[:, bins["hard"]])
            / np.median(np.array(plain_tokens).reshape(6, -1)[:, bins["easy"]])
        ),
    }
    return {
        "accuracy_gain_think_minus_plain_by_difficulty_tercile": table,
        "token_ratio_of_medians": float(np.median(think_tokens) / np.median(plain_tokens)),
        "token_ratio_hard_over_easy": hard_easy,
    }


def roles_and_inputs(world: SimulatedWorld, queries: Sequence[Query], roles: dict[str, RoleSet]) -> dict[str, float]:
    math = roles["math"]

    def upstream(query: Query, right: bool) -> Upstream:
        profile = world.profile(query)
        answer = profile.gold if right else profile.distractors[0]
        return Upstream(
            "u",
            math["Mathematician"],
            world.catalog["qwen3-1.7b"],
            Completion("x", answer, 10, 200, 0.0, 1.0, score=float(right)),
        )

    wrong = lambda q: [upstream(q, False)]  # noqa: E731
    out = {
        "qwen3-8b_mathematician_on_math": hit_rate(answers(world, "qwen3-8b", math["Mathematician"], queries)),
        "qwen3-8b_psychologist_on_math": hit_rate(
            answers(world, "qwen3-8b", roles["general"]["Psychologist"], queries)
        ),
        "qwen3-1.7b_alone": hit_rate(answers(world, "qwen3-1.7b", math["Mathematician"], queries)),
        "qwen3-1.7b_given_two_wrong_inputs": hit_rate(
            answers(world, "qwen3-1.7b", math["Mathematician"], queries, lambda q: [upstream(q, False)] * 2)
        ),
    }
    for backbone in ("qwen3-1.7b", "qwen3-8b", "qwen3-235b-a22b", "qwen3-235b-a22b-think"):
        out[f"verifier_{backbone}_repairs_one_wrong_input"] = hit_rate(
            answers(world, backbone, math["Verifier"], queries, wrong)
        )
    return out


def main() -> None:
    catalog = Catalog.load()
    world = SimulatedWorld(catalog, seed=0)
    roles = {domain: RoleSet.load(domain) for domain in DOMAINS}
    items = {domain: generate_synthetic(domain, 2000, seed=7) for domain in DOMAINS}
    real = json.loads((RESULTS / "replay_stats.json").read_text())["worlds"]
    mmlu_pro, gsm8k = real["mmlu-pro-dev"], real["gsm8k-reasoning-dev"]
    result = {
        "command": "python benchmarks/studies/simulated_world_realism.py",
        "setting": "catalog pools/qwen3-deepseek.yaml, world seed 0, 2,000 synthetic items a domain (seed 7)",
        "calibration": calibration(world, items, roles),
        "general_domain_vs_mmlu_pro": {
            "simulated": correlation_and_votes(world, items["general"][:1000], roles["general"].decision),
            "real_error_phi_all_pairs": mmlu_pro["error_correlation"]["all_pairs"],
            "real_error_phi_within_bins_mean": mmlu_pro["error_correlation_within_difficulty_bins"][
                "mean_over_bins_all_pairs"
            ],
            "real_vote_gain_k3": mmlu_pro["majority_vote_gain"]["k3"]["random_groups"],
        },
        "math_domain_reasoning_vs_gsm8k": {
            "simulated": reasoning(world, items["math"], roles["math"].decision),
            "real_token_ratio_of_medians": gsm8k["completion_tokens"]["ratio_of_medians"],
            "real_by_difficulty": gsm8k["by_difficulty"],
        },
        "roles_and_inputs_math": roles_and_inputs(world, items["math"][:1000], roles),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "simulated_world_realism.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "calibration"}, indent=1)[:6000])
    print("calibration max |gap| (points):", result["calibration"]["max_abs_gap_points"])


if __name__ == "__main__":
    main()
