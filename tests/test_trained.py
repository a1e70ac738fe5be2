"""`TrainedController`: a run folder as one object that constructs, runs and evaluates, and the one grading
rule every path shares (a code task's scorer grades its answers; an ungraded answer is None, never wrong)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbalance import Budget, Query, TrainedController
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.measuring import summarise
from agentbalance.runtime.execution import Outcome
from tests.conftest import agentbalance
from tests.loopback_server import LoopbackServer
from tests.test_tasks import HUMANEVAL_RECORD, write_jsonl


@pytest.fixture(scope="module")
def controller(trained_run: Path) -> TrainedController:
    return TrainedController.load(trained_run)


def test_a_text_and_a_query_get_the_same_mas_and_only_a_query_gives_its_id(controller: TrainedController) -> None:
    text = "What is 17 * 23?"
    from_text = controller.construct(text)
    from_query = controller.construct(Query(id="q7", question=text))
    assert from_text.query_id is None and from_query.query_id == "q7"
    assert from_text.to_json() | {"query_id": "q7"} == from_query.to_json()


def test_a_batch_builds_what_one_query_at_a_time_builds(controller: TrainedController) -> None:
    texts = ["What is 17 * 23?", "Which river flows through Cairo?", "Write a function that reverses a list."]
    assert [m.to_json() for m in controller.construct_many(texts)] == [
        controller.construct(text).to_json() for text in texts
    ]
    assert controller.construct_many([]) == []


def test_a_single_budget_controller_refuses_another_budget(controller: TrainedController) -> None:
    assert controller.construct("x", budget=controller.budget).agents
    with pytest.raises(AgentBalanceError, match="--budget-conditioned"):
        controller.construct("x", budget=Budget(tok=0.1))


def test_evaluate_on_the_test_split_reproduces_what_build_measured(
    controller: TrainedController, trained_run: Path
) -> None:
    measured = json.loads((trained_run / "metrics.json").read_text())["test"]
    result = controller.evaluate(split="test")
    assert (result.perf, result.tok, result.lat, result.n) == (
        measured["perf"],
        measured["tok"],
        measured["lat"],
        measured["n"],
    )
    assert result.n_graded == result.n  # the simulator grades every answer


def test_evaluate_all_takes_every_question_of_the_world(controller: TrainedController) -> None:
    assert controller.evaluate(split="all").n == 40 + 20 + 20
    with pytest.raises(AgentBalanceError, match="unknown split"):
        controller.evaluate(split="everything")


def test_run_defaults_to_the_world_it_was_trained_in(controller: TrainedController) -> None:
    traces = controller.run(["What is 17 * 23?", Query(id="q2", question="What is 2 + 2?")])
    assert [trace.world for trace in traces] == ["simulated", "simulated"]
    assert traces[1].id == "q2" and all(trace.cost_usd > 0 for trace in traces)


def test_perf_is_the_mean_over_graded_queries_and_n_graded_counts_them() -> None:
    single = MAS.single("Decision Maker", "qwen3-8b")
    outcomes = [Outcome("A", True, 0.01, 1.0, 1), Outcome("B", False, 0.01, 1.0, 1), Outcome("C", None, 0.01, 1.0, 1)]
    result = summarise([single] * 3, outcomes, 1.64)
    assert (result.perf, result.n_graded, result.n) == (0.5, 2, 3)
    assert result.tok == pytest.approx(1.0)  # an ungraded query still costs


def canonical_responder(body: dict) -> str:
    """An endpoint that answers HumanEval/900 with its canonical solution, fenced as chat models do."""
    return f"Here is the function:\n```python\n{HUMANEVAL_RECORD['prompt']}{HUMANEVAL_RECORD['canonical_solution']}```"


def test_a_live_code_task_is_graded_by_its_test_suite(tmp_path: Path) -> None:
    """HumanEval's gold is a test suite, not an answer string: `run --task humaneval` grades it all the same
    (it reported `"correct": null` for canonical solutions before the one grading rule)."""
    data = write_jsonl(tmp_path / "HumanEval.jsonl", [HUMANEVAL_RECORD])
    mas = tmp_path / "mas.json"
    mas.write_text(json.dumps({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "edges": [],
                               "decision": "d"}))  # fmt: skip
    with LoopbackServer(responder=canonical_responder) as server:
        done = agentbalance(
            "run", "--mas", str(mas), "--world", "live", "--base-url", server.base_url, "--task", "humaneval",
            "--data", str(data), "--roles", "code", "--json",
            cwd=tmp_path, env={"AGENTBALANCE_API_KEY": "sk-loopback"},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert record["correct"] is True


def test_a_run_folder_brings_back_its_complements_and_refuses_pools_it_cannot_rebuild(
    trained_run: Path, tmp_path: Path
) -> None:
    """Complements are measured on the build's training split, so only config.json can bring them back."""
    import shutil

    from agentbalance.catalog import Catalog
    from agentbalance.pooling import build_pools

    folder = tmp_path / "run"
    shutil.copytree(trained_run, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    plain = build_pools(Catalog.load())
    complement = sorted(plain.dominated_by)[0]
    with_it = build_pools(Catalog.load(), k=config["pool_count"], seed=config["seed"], complements=[complement])
    config |= {"pools": with_it.pools, "complements": [complement]}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    loaded = TrainedController.load(folder)
    assert complement in loaded.controller.context.backbone_names
    config["complements"] = []
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(AgentBalanceError, match="no longer give the pools it was trained with"):
        TrainedController.load(folder)
