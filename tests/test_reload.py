"""A saved controller reloads as it was trained: the same pools, backbone features and MAS, whatever seed
or catalog the world is opened with, and without the world at hand."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from agentbalance.budgets import Budget
from agentbalance.encoders import TextEncoder
from agentbalance.experiment import ExperimentSpec, embed_queries, world_catalogs
from agentbalance.policy.budget_input import budget_condition
from agentbalance.run_folder import load_controller
from agentbalance.train.build import BuildSpec, Built, build
from agentbalance.train.config import TrainConfig
from agentbalance.worlds import open_world
from tests.test_cli import agentbalance
from tests.test_replay_world import mcq_tables, write_world

pytestmark = pytest.mark.slow  # builds, trains or sweeps: left out of `make test-fast`

BUDGET = Budget(tok=5.0, lat=60.0)


@pytest.fixture(scope="module")
def replay_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A replay build with seed 1: its split and its calibrated pools are not seed 0's."""
    folder = write_world(tmp_path_factory.mktemp("world") / "tiny-mcq", *mcq_tables())
    experiment = ExperimentSpec(world=f"replay:{folder}", sizes=(12, 4, 4), seed=1)
    spec = BuildSpec(experiment, budget=BUDGET, train=TrainConfig(epochs=1), restarts=1)
    return build(spec, tmp_path_factory.mktemp("runs") / "run")


def constructions(controller, built: Built) -> list[dict]:
    queries = built.splits.train + built.splits.val + built.splits.test
    embeddings = torch.stack(list(embed_queries(TextEncoder(), queries).values()))
    return [m.to_json() for m in controller.construct(embeddings, budget_condition(BUDGET, len(queries)))]


def assert_reloaded_as_trained(controller, built: Built) -> None:
    trained, loaded = built.controller.context, controller.context
    assert loaded.backbone_names == trained.backbone_names
    assert torch.equal(loaded.pool_of_backbone, trained.pool_of_backbone)
    assert torch.equal(loaded.backbone_numeric, trained.backbone_numeric)
    assert torch.allclose(loaded.profile_embeddings, trained.profile_embeddings, atol=1e-6)
    assert constructions(controller, built) == constructions(built.controller, built)


def test_a_replay_controller_reloads_with_the_pools_and_features_it_was_trained_on(replay_build: Built) -> None:
    controller, _ = load_controller(replay_build.out)
    assert_reloaded_as_trained(controller, replay_build)


def test_opening_the_world_with_another_seed_keeps_the_trained_pools(replay_build: Built) -> None:
    """The world's seed-0 calibration differs from the build's seed-1 one: the run's own catalogs win."""
    config = json.loads((replay_build.out / "config.json").read_text())
    seed0 = world_catalogs(open_world(config["world"], seed=0))
    controller, _ = load_controller(replay_build.out, seed0)
    assert_reloaded_as_trained(controller, replay_build)


def test_a_run_folder_needs_no_replay_world_to_construct(replay_build: Built, tmp_path: Path) -> None:
    moved = tmp_path / "moved"
    shutil.copytree(replay_build.out, moved)
    config = json.loads((moved / "config.json").read_text())
    config["world"] = f"replay:{tmp_path / 'gone'}"
    (moved / "config.json").write_text(json.dumps(config))
    controller, _ = load_controller(moved)
    assert_reloaded_as_trained(controller, replay_build)


def test_a_run_folder_of_an_older_version_recalibrates_with_its_own_seed(replay_build: Built, tmp_path: Path) -> None:
    """Older run folders saved no catalogs: they are derived again from the world, with the run's seed."""
    older = tmp_path / "older"
    shutil.copytree(replay_build.out, older)
    config = json.loads((older / "config.json").read_text())
    del config["catalogs"]
    (older / "config.json").write_text(json.dumps(config))
    controller, _ = load_controller(older)
    assert torch.equal(controller.context.backbone_numeric, replay_build.controller.context.backbone_numeric)
    assert constructions(controller, replay_build) == constructions(replay_build.controller, replay_build)


def test_damaged_saved_catalogs_are_one_clear_error(replay_build: Built, tmp_path: Path) -> None:
    from agentbalance.errors import AgentBalanceError

    damaged = tmp_path / "damaged"
    shutil.copytree(replay_build.out, damaged)
    config = json.loads((damaged / "config.json").read_text())
    del config["catalogs"]["pooled"]["backbones"][0]["price_in"]
    (damaged / "config.json").write_text(json.dumps(config))
    with pytest.raises(AgentBalanceError, match=r"config.json \(catalogs.pooled\): backbones entry 0 .*price_in"):
        load_controller(damaged)


def test_evaluate_reports_the_builds_test_numbers_by_default(tmp_path: Path) -> None:
    """`evaluate` takes the run's seed unless told otherwise, so it sees the build's test split."""
    folder = write_world(tmp_path / "tiny-mcq", *mcq_tables())
    common = ["--world", f"replay:{folder}", "--json"]
    built = agentbalance(
        "build", "--budget-tok", "5", "--budget-lat", "60", "--train", "12", "--val", "4", "--test", "4",
        "--epochs", "1", "--restarts", "1", "--seed", "1", "--out", "run", *common, cwd=tmp_path,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    evaluated = agentbalance("evaluate", "--model", "run", *common, cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    keys = ("perf", "tok", "lat", "feasible", "n")
    build_json, evaluate_json = json.loads(built.stdout.splitlines()[-1]), json.loads(evaluated.stdout)
    assert {k: evaluate_json[k] for k in keys} == {k: build_json[k] for k in keys}
    # and the validation numbers `build` reports are what the kept policy does there (an anchored start is
    # judged by its cost on training and validation questions: that is reported apart, as `judged`)
    on_val = json.loads(agentbalance("evaluate", "--model", "run", "--split", "val", *common, cwd=tmp_path).stdout)
    reported = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert {k: on_val[k] for k in ("perf", "tok", "lat")} == {k: reported["val"][k] for k in ("perf", "tok", "lat")}


def build_on_tiny_world(folder: Path, *budget: str, train: str = "12") -> subprocess.CompletedProcess[str]:
    """`build` from `folder` on a tiny replay world written there and named by a relative path, into `run`."""
    write_world(folder / "tiny-mcq", *mcq_tables())
    built = agentbalance(
        "build", *budget, "--world", "replay:tiny-mcq", "--train", train, "--val", "4", "--test", "4",
        "--epochs", "1", "--restarts", "1", "--out", "run", cwd=folder,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    return built


def test_run_of_a_replay_controller_replays_its_own_world_from_anywhere(tmp_path: Path) -> None:
    """`run --model` without `--world` uses the world the controller was trained in (as `evaluate` and the Python
    API do), found from any working directory although `build` was given a relative path; a question text, which a
    replay world cannot answer, is one clear error that says how to name recorded questions."""
    built = build_on_tiny_world(tmp_path, "--budget-tok", "5", train="500")
    assert "the world's splits hold fewer questions than asked" in " ".join(built.stdout.split())  # not silently
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    question_id = json.loads((tmp_path / "tiny-mcq" / "questions.jsonl").read_text().splitlines()[0])["id"]
    (elsewhere / "ids.jsonl").write_text(json.dumps({"id": question_id}) + "\n")
    ran = agentbalance("run", "--model", "../run", "--input", "ids.jsonl", "--json", cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    trace = json.loads(ran.stdout)
    assert trace["world"] == "replay:tiny-mcq" and trace["id"] == question_id
    text = agentbalance("run", "--model", "../run", "Which option?", cwd=elsewhere)
    assert text.returncode == 2 and "give them with --input FILE.jsonl" in text.stderr


def test_a_budget_out_of_reach_is_refused_by_build_before_training_and_said_by_evaluate(tmp_path: Path) -> None:
    """Below the fastest backbone alone a latency budget cannot be met: `build` says so before training, naming the
    fastest point (not the cheapest), exits 2 and writes no controller; `evaluate`'s table says a budget is not met
    and by what, not only its `--json` (a run folder whose budget was edited below reach)."""
    write_world(tmp_path / "tiny-mcq", *mcq_tables())
    common = ("--world", "replay:tiny-mcq", "--train", "12", "--val", "4", "--test", "4", "--epochs", "1")
    refused = agentbalance("build", "--budget-lat", "0.0001", *common, "--restarts", "1", "--out", "run", cwd=tmp_path)
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2 and "below every reachable point" in said and "the fastest" in said
    assert "nothing was trained" in said and not (tmp_path / "run" / "controller.pt").exists()
    build_on_tiny_world(tmp_path, "--budget-lat", "60")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    config["budget"]["lat"] = 0.0001
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    evaluated = agentbalance("evaluate", "--model", "run", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "budget NOT met on test: Lat" in " ".join(evaluated.stdout.split())


def test_a_world_without_its_own_catalog_keeps_the_runs(replay_build: Built, tmp_path: Path) -> None:
    """Opened in the simulator or a live world (which bring no catalog), a controller keeps the catalog it was
    built with; a replay world brings its own `models.yaml`; a named `--catalog` always wins."""
    from agentbalance.run_folder import read_run_config

    config = read_run_config(replay_build.out).model_copy(update={"catalog": "/runs/own.yaml"})
    assert config.catalog_for(None) == config.catalog_for("sim") == config.catalog_for("live") == "/runs/own.yaml"
    assert config.catalog_for("replay:/elsewhere") is None


def test_evaluate_all_takes_every_question_of_a_replay_world(replay_build: Built) -> None:
    """`--split all` is a controller on a whole data set: every recorded question, not the build's split sizes."""
    from agentbalance.trained import TrainedController

    folder = Path(json.loads((replay_build.out / "config.json").read_text())["world"].removeprefix("replay:"))
    recorded = len((folder / "questions.jsonl").read_text().splitlines())
    controller = TrainedController.load(replay_build.out)
    smaller = dataclasses.replace(controller.experiment_spec(), sizes=(4, 2, 2))  # as if built on fewer
    assert controller.evaluate(split="all", spec=smaller).n == recorded > 4 + 2 + 2


def test_python_run_in_a_replay_world_asks_for_recorded_queries(replay_build: Built) -> None:
    """A text has no recorded answer: the error says how to name recorded questions, not that an id the user
    never gave is unknown."""
    from agentbalance.errors import AgentBalanceError
    from agentbalance.trained import TrainedController

    controller = TrainedController.load(replay_build.out)
    with pytest.raises(AgentBalanceError, match=r"replays its recorded questions only: pass them as Query objects"):
        controller.run(["Which option is right?"])
    (trace,) = controller.run([replay_build.splits.test[0]])
    assert trace.id == replay_build.splits.test[0].id


def test_curve_says_when_a_small_world_measures_on_fewer_questions(tmp_path: Path) -> None:
    """Asked for more test questions than a world holds, `curve` measures on all it has and says so."""
    write_world(tmp_path / "tiny-mcq", *mcq_tables())
    done = agentbalance(
        "curve", "--world", "replay:tiny-mcq", "--methods", "single", "--points", "2", "--train", "8", "--val", "4",
        "--test", "100", "--out", "curve", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the world's test split holds fewer questions than asked" in " ".join(done.stdout.split())
