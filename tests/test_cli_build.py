"""`build`, `run --model`, `evaluate`, `export`, `record` and the live world, as a user runs them."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from agentbalance.catalog import Catalog
from agentbalance.evaluation.ours import AgentBalanceMethod
from agentbalance.experiment import Experiment, ExperimentSpec
from agentbalance.worlds.replay import ReplayWorld
from tests.conftest import agentbalance, write_math_questions
from tests.loopback_server import Fault, LoopbackServer

pytestmark = pytest.mark.slow  # builds, trains or sweeps: left out of `make test-fast`

SMALL = ["--train", "24", "--val", "12", "--test", "12", "--epochs", "2", "--restarts", "1"]


def write_two_agent_mas(path: Path) -> None:
    """A Mathematician feeding the Decision Maker: the smallest MAS file with an edge."""
    document = {
        "agents": [
            {"id": "m", "role": "Mathematician", "backbone": "qwen3-8b"},
            {"id": "d", "role": "Decision Maker", "backbone": "qwen3-14b"},
        ],
        "edges": [["m", "d"]],
        "decision": "d",
    }
    path.write_text(json.dumps(document))


def one_error_line(done: subprocess.CompletedProcess[str], expected: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and line.startswith("error: ")]
    assert len(lines) == 1 and expected in lines[0], done.stderr


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("build")
    done = agentbalance(
        "build", "--budget-tok", "0.5", "--budget-lat", "60", *SMALL, "--out", str(folder / "run"), "--json", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    assert "kept: " in done.stderr and " of 1" in done.stderr, "the progress says which run and epoch were kept"
    result = json.loads(done.stdout)
    keys = {
        "perf",
        "tok",
        "lat",
        "budget_tok",
        "budget_lat",
        "feasible",
        "split",
        "n",
        "n_graded",
        "escalation_rate",
        "out",
    }
    assert set(result) == keys
    assert result["split"] == "test" and result["n"] == 12 and result["budget_tok"] == 0.5
    assert 0.0 <= result["escalation_rate"] <= 1.0  # the share of test queries whose conditional agent ran
    return folder / "run"


def test_build_writes_a_complete_run_folder(run_folder: Path) -> None:
    for name in ("controller.pt", "config.json", "metrics.json", "training.png"):
        assert (run_folder / name).is_file(), name
    metrics = json.loads((run_folder / "metrics.json").read_text())
    assert {"val", "test", "history", "feasible", "cheapest"} <= set(metrics)
    assert len(metrics["history"]) == 2
    # which weights the controller holds: a run of the build and an epoch of it (0: the anchored start)
    assert metrics["kept_run"] >= 1 and 0 <= metrics["kept_epoch"] <= 2
    assert metrics["test"]["tok"] <= 0.5 or not metrics["feasible"]


def test_run_export_and_evaluate_use_the_trained_controller(run_folder: Path, tmp_path: Path) -> None:
    done = agentbalance("run", "--model", str(run_folder), "What is 12 * 12?", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["agents"] and record["agents"][-1]["role"] == "Decision Maker"
    mermaid = agentbalance(
        "export", "--model", str(run_folder), "--query", "What is 12 * 12?", "--format", "mermaid", cwd=tmp_path
    )
    assert mermaid.returncode == 0 and mermaid.stdout.startswith("flowchart LR")
    exported = json.loads(
        agentbalance("export", "--model", str(run_folder), "--query", "What is 12 * 12?", cwd=tmp_path).stdout
    )
    assert [a["backbone"] for a in exported["agents"]] == [a["backbone"] for a in record["agents"]]
    script = agentbalance(
        "export", "--model", str(run_folder), "--query", "What is 12 * 12?", "--format", "autogen", cwd=tmp_path
    )
    assert script.returncode == 0, script.stderr
    compile(script.stdout, "exported.py", "exec")  # a runnable script: at least valid Python
    assert "def build_flow" in script.stdout and "sk-" not in script.stdout
    for agent in exported["agents"]:
        assert agent["backbone"] in script.stdout
    evaluated = agentbalance("evaluate", "--model", str(run_folder), "--json", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["n"] == 12


def test_a_catalog_too_small_for_the_controllers_pools_is_a_clear_error(run_folder: Path, tmp_path: Path) -> None:
    """Inductive use over a catalog whose Pareto front cannot fill the pools the controller chooses among: the
    error names the controller, the count, and what the user can do (not a `--k` that `evaluate` lacks)."""
    shipped = Catalog.load()
    two = {"backbones": [shipped[n].model_dump(mode="json", exclude_none=True) for n in ("qwen3-1.7b", "qwen3-8b")]}
    (tmp_path / "two.yaml").write_text(json.dumps(two), encoding="utf-8")
    done = agentbalance("evaluate", "--model", str(run_folder), "--catalog", "two.yaml", cwd=tmp_path)
    one_error_line(done, "this controller chooses among 4 pools")
    assert "build a controller with fewer pools" in done.stderr and "--k" not in done.stderr


def test_an_incompatible_checkpoint_is_a_clear_error(run_folder: Path, tmp_path: Path) -> None:
    broken = tmp_path / "old-run"
    broken.mkdir()
    config = json.loads((run_folder / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "version": 99}))
    one_error_line(
        agentbalance("export", "--model", str(broken), "--query", "x", cwd=tmp_path),
        "checkpoint version 99 is not supported",
    )
    one_error_line(
        agentbalance("export", "--model", str(tmp_path), "--query", "x", cwd=tmp_path), "is not a run folder"
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--budget-tok", "0"], "--budget-tok must be a positive number"),
        (["--budget-lat", "-5"], "--budget-lat must be a positive number"),
        (["--budget-tok", "0.5", "--world", "mars"], "unknown world 'mars'"),
        (["--budget-tok", "0.5", "--pools", "9"], "cannot make 9 pools"),
        ([], "give a budget"),
    ],
)
def test_bad_build_input_is_one_clear_error_line(tmp_path: Path, args: list[str], expected: str) -> None:
    one_error_line(agentbalance("build", *args, *SMALL, "--out", str(tmp_path / "r"), cwd=tmp_path), expected)


def test_record_writes_a_replay_world_that_run_can_replay(tmp_path: Path) -> None:
    done = agentbalance(
        "record", "--world", "sim", "--task", "synthetic-math", "--limit", "4", "--out", "world", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "recorded 4 questions x 14 backbones" in done.stdout
    mas = tmp_path / "mas.json"
    mas.write_text(
        json.dumps({"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "decision": "d"})
    )
    ids = tmp_path / "ids.jsonl"
    ids.write_text("".join(json.dumps({"id": f"syn-math-0-{i}"}) + "\n" for i in range(4)))
    replayed = agentbalance(
        "run", "--mas", "mas.json", "--world", "replay:world", "--input", "ids.jsonl", "--json", cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    assert len(replayed.stdout.splitlines()) == 4


def test_record_stops_at_its_spend_cap_and_writes_the_questions_every_backbone_answered(tmp_path: Path) -> None:
    command = ["record", "--world", "sim", "--task", "synthetic-math", "--limit", "12", "--concurrency", "1"]
    done = agentbalance(*command, "--out", "world", "--max-usd-total", "0.2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "stopped at the spend cap (--max-usd-total 0.2)" in said and "rerun this command with a larger" in said
    kept = len((tmp_path / "world" / "questions.jsonl").read_text().splitlines())
    assert 0 < kept < 12 and f"kept the {kept} of 12 questions" in said
    assert ReplayWorld.load(tmp_path / "world").describe()["questions"] == kept
    nothing = agentbalance(*command, "--out", "none", "--max-usd-total", "0.000001", cwd=tmp_path)
    one_error_line(nothing, "nothing was written; raise --max-usd-total")
    assert not (tmp_path / "none").exists()


def test_record_keeps_a_measured_unanswered_share_in_the_models_yaml_it_writes(tmp_path: Path) -> None:
    """The simulated world reads `unanswered_share`; a recording of a catalog that gives it must keep it (and
    write nothing for a backbone that does not)."""
    entry = {"family": "f", "reasoning": False, "params_active_b": 7, "price_in": 0.1, "price_out": 0.2}
    catalog = {
        "backbones": [
            {"name": "measured", **entry, "scores": {"mmlu": 60}, "unanswered_share": 0.38},
            {"name": "pooled", **entry, "scores": {"mmlu": 40}},
        ]
    }
    (tmp_path / "catalog.yaml").write_text(json.dumps(catalog), encoding="utf-8")  # JSON is YAML
    command = ["record", "--world", "sim", "--catalog", "catalog.yaml", "--task", "synthetic-general", "--limit", "2"]
    done = agentbalance(*command, "--out", "world", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    recorded = Catalog.load(tmp_path / "world" / "models.yaml")
    assert recorded["measured"].unanswered_share == 0.38 and recorded["pooled"].unanswered_share is None
    assert "unanswered_share" not in (tmp_path / "world" / "models.yaml").read_text().split("name: pooled")[1]


def test_a_free_backbone_is_trained_with_not_a_crash(tmp_path: Path) -> None:
    """A model served on one's own machine costs nothing (price 0): `build` must train with it among the
    priced ones and say nothing of a log of zero, and `curve`'s agentbalance budget range must start at a
    positive budget."""
    shipped = Catalog.load()
    free = shipped["qwen3-8b"].model_copy(update={"name": "local-8b", "price_in": 0.0, "price_out": 0.0})
    catalog = {"backbones": [free.model_dump(mode="json", exclude_none=True)]}
    catalog["backbones"] += [
        shipped[n].model_dump(mode="json", exclude_none=True) for n in ("qwen3-1.7b", "qwen3-235b-a22b")
    ]
    (tmp_path / "catalog.yaml").write_text(json.dumps(catalog), encoding="utf-8")  # JSON is YAML
    common = ["--catalog", "catalog.yaml", *SMALL[:6]]
    built = agentbalance("build", "--budget-tok", "0.05", *common, *SMALL[6:], "--out", "run", "--json", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "RuntimeWarning" not in built.stderr and json.loads(built.stdout)["feasible"] is True
    # `run --model` runs it on the backbones it was built with (never silently the shipped catalog's), from anywhere
    (tmp_path / "elsewhere").mkdir()
    ran = agentbalance("run", "--model", "../run", "What is 2 + 2?", "--json", cwd=tmp_path / "elsewhere")
    assert ran.returncode == 0, ran.stderr
    names = {entry["name"] for entry in catalog["backbones"]}
    assert {agent["backbone"] for agent in json.loads(ran.stdout)["agents"]} <= names
    # `curve`'s agentbalance range starts where spending starts: the cheapest priced backbone alone, not at 0
    experiment = Experiment.open(ExperimentSpec(catalog=str(tmp_path / "catalog.yaml"), sizes=(8, 8, 8)), None)
    budget_range = AgentBalanceMethod().budget_range(experiment, "tok")
    assert math.isfinite(budget_range.ratio) and budget_range.at(1 / budget_range.ratio).tok > 0


def test_run_in_the_live_world_against_a_loopback_endpoint(tmp_path: Path) -> None:
    mas = tmp_path / "mas.json"
    write_two_agent_mas(mas)
    with LoopbackServer(api_keys={"sk-loopback"}) as server:
        env = {"AGENTBALANCE_API_KEY": "sk-loopback"}
        args = [
            "run",
            "--mas",
            "mas.json",
            "--world",
            "live",
            "--base-url",
            server.base_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
            "What is 2 + 2?",
        ]
        done = agentbalance(*args, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout)
        assert len(server.requests) == 2 and record["cost_usd"] > 0
        assert {r.body["model"] for r in server.requests} == {"qwen3-8b", "qwen3-14b"}
        again = agentbalance(*args, cwd=tmp_path, env=env)
        assert again.returncode == 0 and len(server.requests) == 2, "the rerun is served by the cache"
        for path in (tmp_path / "cache").rglob("*"):
            if path.is_file():
                assert b"sk-loopback" not in path.read_bytes()
        assert "sk-loopback" not in done.stdout + done.stderr
        key_file = tmp_path / "loopback.key"
        key_file.write_text("sk-loopback\n")
        key_file.chmod(0o600)
        from_file = agentbalance(
            *args[:-2], "--no-cache", "--api-key-file", str(key_file), "--json", "What is 5 + 5?",
            cwd=tmp_path,
        )  # fmt: skip
        assert from_file.returncode == 0, from_file.stderr
        assert "sk-loopback" not in from_file.stdout + from_file.stderr
        one_error_line(
            agentbalance(*args[:-2], "--api-key-file", str(tmp_path / "none.key"), "x", cwd=tmp_path, env={}),
            "none.key",
        )
        wrong = agentbalance(
            *args[:-2], "--no-cache", "What is 3 + 3?", cwd=tmp_path, env={"AGENTBALANCE_API_KEY": "sk-wrong"}
        )
        one_error_line(wrong, "rejected the API key")


def test_a_live_build_keeps_to_its_per_backbone_concurrency(tmp_path: Path) -> None:
    """A one-slot server (llama.cpp's default) must see one call at a time per backbone, or queueing counts as
    latency and calls time out: `build` takes `--concurrency-per-backbone` like `run`, `record` and `serve`."""
    one = {"backbones": [Catalog.load()["qwen3-8b"].model_dump(mode="json", exclude_none=True)]}
    (tmp_path / "one.yaml").write_text(json.dumps(one), encoding="utf-8")
    questions = write_math_questions(tmp_path / "q.jsonl", 8)
    with LoopbackServer(api_keys={"sk-loopback"}) as server:
        server.always("qwen3-8b", Fault(kind="slow", delay_s=0.02))  # calls overlap unless the client holds back
        done = agentbalance(
            "build", "--budget-tok", "1", "--world", "live", "--base-url", server.base_url, "--catalog", "one.yaml",
            "--task", "jsonl", "--data", str(questions), "--train", "4", "--val", "2", "--test", "2",
            "--epochs", "1", "--restarts", "1", "--concurrency-per-backbone", "1", "--no-cache", "--out", "run",
            cwd=tmp_path, env={"AGENTBALANCE_API_KEY": "sk-loopback"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert len(server.requests) >= 8 and server.max_in_flight == 1  # without the option: 16 at once


def test_build_refuses_questions_none_of_which_can_be_graded_and_warns_when_some_cannot(tmp_path: Path) -> None:
    """No gold answer, no recorded grade: a clear error before any training (not a NaN reward and Perf 0.0%); a
    split of which only some questions can be graded trains, with a warning that gives the count."""
    lines = [json.loads(line) for line in write_math_questions(tmp_path / "q.jsonl", 16).read_text().splitlines()]
    (tmp_path / "none.jsonl").write_text("".join(json.dumps({**q, "answer": None}) + "\n" for q in lines))
    half = [{**q, "answer": None} if i % 2 else q for i, q in enumerate(lines)]
    (tmp_path / "half.jsonl").write_text("".join(json.dumps(q) + "\n" for q in half))
    env = {"AGENTBALANCE_API_KEY": "sk-loopback"}
    small = ["--max-pool", "1", "--train", "8", "--val", "4", "--test", "4", "--epochs", "1", "--restarts", "1"]
    with LoopbackServer(api_keys={"sk-loopback"}) as server:
        live = ["build", "--budget-tok", "1", "--world", "live", "--base-url", server.base_url, "--task", "jsonl"]
        refused = agentbalance(*live, "--data", "none.jsonl", *small, "--out", "none", cwd=tmp_path, env=env)
        one_error_line(refused, "none of the 8 training questions can be graded")
        assert not (tmp_path / "none").exists()
        warned = agentbalance(*live, "--data", "half.jsonl", *small, "--out", "half", cwd=tmp_path, env=env)
        assert warned.returncode == 0, warned.stderr
        said = " ".join(warned.stdout.split())
        assert "warning: only" in said and "of the 8 training questions can be graded" in said


def test_build_and_evaluate_in_the_live_world_with_a_task(tmp_path: Path) -> None:
    questions = write_math_questions(tmp_path / "q.jsonl", 20)
    env = {"AGENTBALANCE_API_KEY": "sk-loopback"}
    with LoopbackServer(api_keys={"sk-loopback"}) as server:
        live = ["--world", "live", "--base-url", server.base_url, "--cache-dir", str(tmp_path / "cache")]
        task = ["--task", "jsonl", "--data", str(questions)]
        done = agentbalance(
            "build",
            "--budget-tok",
            "1",
            *live,
            *task,
            "--max-pool",  # pools 0-1 only: fewer templates to pay for (test_secrets builds on every pool)
            "1",
            "--train",
            "8",
            "--val",
            "4",
            "--test",
            "4",
            "--epochs",
            "1",
            "--restarts",
            "1",
            "--out",
            "run",
            "--json",
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["n"] == 4 and result["perf"] == 1.0, "the loopback endpoint answers 4, the task scores it"
        assert result["tok"] > 0 and len(server.requests) > 8
        evaluated = agentbalance("evaluate", "--model", "run", *live, "--json", cwd=tmp_path, env=env)
        assert evaluated.returncode == 0, evaluated.stderr
        assert json.loads(evaluated.stdout)["perf"] == 1.0
    one_error_line(
        agentbalance(
            "build",
            "--budget-tok",
            "1",
            "--world",
            "live",
            "--base-url",
            "http://127.0.0.1:9/v1",
            cwd=tmp_path,
            env=env,
        ),
        "needs --task NAME",
    )


def test_record_from_a_live_endpoint_measures_latency_and_is_replayable(tmp_path: Path) -> None:
    catalog = tmp_path / "two.yaml"
    catalog.write_text(
        "backbones:\n"
        "  - {name: small, family: t, reasoning: false, params_active_b: 2, price_in: 0.1, price_out: 0.2,"
        " scores: {math: 50}}\n"
        "  - {name: large, family: t, reasoning: true, params_active_b: 30, price_in: 1.0, price_out: 4.0,"
        " scores: {math: 90}, request: {enable_thinking: true}}\n",
        encoding="utf-8",
    )
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"What is {i} + 4 - {i}?", "answer": "4"}) + "\n" for i in range(3)
        ),
        encoding="utf-8",
    )
    with LoopbackServer(api_keys={"sk-loopback"}) as server:
        done = agentbalance(
            "record",
            "--world",
            "live",
            "--base-url",
            server.base_url,
            "--task",
            "jsonl",
            "--data",
            str(questions),
            "--catalog",
            str(catalog),
            "--out",
            "world",
            "--cache-dir",
            "cache",
            cwd=tmp_path,
            env={"AGENTBALANCE_API_KEY": "sk-loopback"},
        )
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 6
        assert any(r.body.get("enable_thinking") is True for r in server.requests if r.model == "large")
        again = agentbalance(
            *done.args[1:-4],
            "--out",
            "world2",
            "--cache-dir",
            "cache",
            cwd=tmp_path,
            env={"AGENTBALANCE_API_KEY": "sk-loopback"},
        )
        assert again.returncode == 0 and len(server.requests) == 6, again.stderr  # every call from the cache
        said = " ".join(again.stdout.split())
        assert "6 calls (6 from the cache)" in said and "(USD 0.0000 paid now)" in said
    import pandas as pd

    outcomes = pd.read_csv(tmp_path / "world" / "outcomes.csv.gz")
    assert len(outcomes) == 6 and (outcomes["latency_s"] > 0).all() and (outcomes["correct"] == 1).all()
    assert "sk-loopback" not in (tmp_path / "world" / "models.yaml").read_text()
