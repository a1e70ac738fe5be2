"""`agentbalance run`: a hand-written MAS executed in the simulated and a replay world, JSONL out, clear errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import write_panel_mas
from tests.test_cli import agentbalance
from tests.test_replay_world import mcq_tables, write_world

AGENT_KEYS = {
    "id",
    "role",
    "backbone",
    "answer",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "start_s",
    "end_s",
    "error",
}


def write_json(path: Path, payload: object) -> Path:
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


@pytest.fixture
def replay_folder(tmp_path: Path) -> Path:
    questions, outcomes = mcq_tables()
    return write_world(tmp_path / "world", questions, outcomes)


def replay_mas(tmp_path: Path) -> Path:
    solvers = [("s1", "Scientist", "alpha"), ("s2", "Historian", "beta")]
    return write_panel_mas(tmp_path / "mas.json", solvers, ("d", "Decision Maker", "gamma"))


def run_replayed(tmp_path: Path, replay_folder: Path, queries: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """`run` of the three-agent replay MAS on a query file in the replay world."""
    world = f"replay:{replay_folder}"
    return agentbalance("run", "--mas", str(replay_mas(tmp_path)), "--world", world, "--input", queries, *flags,
                        cwd=tmp_path)  # fmt: skip


def test_run_in_a_replay_world_prints_one_json_line_per_query(tmp_path: Path, replay_folder: Path) -> None:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q00"}\n\n{"id": "q01"}\n', encoding="utf-8")
    done = run_replayed(tmp_path, replay_folder, str(queries), "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["q00", "q01"]
    for line in lines:
        assert {"id", "answer", "correct", "score", "cost_usd", "latency_s", "wall_s", "agents"} <= set(line)
        assert all(set(agent) >= AGENT_KEYS for agent in line["agents"])
        assert line["cost_usd"] == pytest.approx(sum(agent["cost_usd"] for agent in line["agents"]))
        decision = next(agent for agent in line["agents"] if agent["id"] == "d")
        assert line["latency_s"] == pytest.approx(decision["end_s"])
    assert lines[0]["correct"] is True and lines[0]["score"] == 1.0 and lines[0]["answer"] == "A"


def test_run_on_the_embedded_simulator_says_it_is_one(tmp_path: Path) -> None:
    mas = write_json(
        tmp_path / "mas.json",
        {
            "agents": [
                {"id": "m", "role": "Mathematician", "backbone": "qwen3-8b"},
                {"id": "d", "role": "Decision Maker", "backbone": "qwen3-30b-a3b"},
            ],
            "edges": [["m", "d"]],
            "decision": "d",
        },
    )
    done = agentbalance("run", "--mas", str(mas), "What is 17 * 23?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "world: simulated (a calibrated simulator" in done.stdout
    assert "answer:" in done.stdout and "latency:" in done.stdout and "Mathematician" in done.stdout
    again = agentbalance("run", "--mas", str(mas), "What is 17 * 23?", "--json", cwd=tmp_path)
    record = json.loads(again.stdout)
    assert record["correct"] is None, "no gold: the simulator does not claim correctness"
    assert [agent["role"] for agent in record["agents"]] == ["Mathematician", "Decision Maker"]
    rerun = json.loads(agentbalance("run", "--mas", str(mas), "What is 17 * 23?", "--json", cwd=tmp_path).stdout)
    assert {k: v for k, v in rerun.items() if k != "wall_s"} == {k: v for k, v in record.items() if k != "wall_s"}


def test_a_run_of_several_questions_says_how_many_were_graded(tmp_path: Path) -> None:
    mas = write_json(
        tmp_path / "mas.json",
        {"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "edges": [], "decision": "d"},
    )
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"id": "a", "question": "What is 2 + 2?", "answer": "4"}\n'
        '{"id": "b", "question": "What is 3 + 3?"}\n{"id": "c", "question": "What is 5 + 5?"}\n',
        encoding="utf-8",
    )
    done = agentbalance("run", "--mas", str(mas), "--input", str(queries), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("3 queries: accuracy ") and "(graded 1 of 3)" in summary


BAD_RUNS = {
    "cycle": ({"edges": [["s1", "d"], ["s2", "d"], ["d", "s1"]]}, [], "the edges contain a cycle"),
    "unknown backbone": (
        {"agents": [{"id": "d", "role": "Decision Maker", "backbone": "gpt-9"}], "edges": []},
        [],
        "agent 'd' uses unknown backbone 'gpt-9'",
    ),
    "unknown role": (
        {"agents": [{"id": "d", "role": "Wizard", "backbone": "alpha"}], "edges": []},
        [],
        "agent 'd' uses unknown role 'Wizard'",
    ),
    "bad jsonl": ({}, ["--input", "bad.jsonl"], "bad.jsonl: line 2, column 8: malformed JSON"),
    "unknown query id": ({}, ["--input", "unknown.jsonl"], "q99"),
    "text and input": ({}, ["--input", "bad.jsonl", "some text"], "exactly one"),
    "negative cap": ({}, ["--input", "unknown.jsonl", "--max-usd", "-1"], "max_usd must be positive"),
}


@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_bad_run_input_is_one_clear_error_line(tmp_path: Path, replay_folder: Path, case: str) -> None:
    change, extra, expected = BAD_RUNS[case]
    document = json.loads(replay_mas(tmp_path).read_text())
    write_json(tmp_path / "mas.json", {**document, **change, "decision": "d"})
    (tmp_path / "bad.jsonl").write_text('{"id": "q00"}\n{"id": \n', encoding="utf-8")
    (tmp_path / "unknown.jsonl").write_text('{"id": "q99"}\n', encoding="utf-8")
    args = ["run", "--mas", "mas.json", "--world", f"replay:{replay_folder}", *extra]
    if "--input" not in extra:
        args += ["--input", "unknown.jsonl"]
    done = agentbalance(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], done.stderr


def test_a_malformed_replay_folder_is_one_clear_error_line(tmp_path: Path, replay_folder: Path) -> None:
    (replay_folder / "outcomes.csv.gz").write_bytes(b"this is not gzip")
    (tmp_path / "ids.jsonl").write_text('{"id": "q00"}\n', encoding="utf-8")
    done = run_replayed(tmp_path, replay_folder, "ids.jsonl")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "outcomes.csv.gz" in lines[0], done.stderr


def test_runs_table_marks_a_skipped_and_an_escalated_conditional_agent(tmp_path: Path, replay_folder: Path) -> None:
    """A cascade alpha + beta -> gamma: on q00 both are right (gamma is skipped), on q05 alpha errs (gamma runs)."""
    mas = write_json(
        tmp_path / "cascade.json",
        {
            "agents": [
                {"id": "s1", "role": "Scientist", "backbone": "alpha"},
                {"id": "s2", "role": "Historian", "backbone": "beta"},
                {"id": "d", "role": "Decision Maker", "backbone": "gamma", "when": "disagree"},
            ],
            "edges": [["s1", "d"], ["s2", "d"]],
            "decision": "d",
        },
    )
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q00"}\n{"id": "q05"}\n', encoding="utf-8")
    done = agentbalance("run", "--mas", str(mas), "--world", f"replay:{replay_folder}", "--input", str(queries),
                        cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split("query q05")
    assert "inputs agreed" in first and "ran: inputs disagreed" not in first
    assert "ran: inputs disagreed" in second and "escalated: inputs disagreed" in second
    assert "escalated 50%" in second


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_one_clear_error_line(tmp_path: Path, blank: str) -> None:
    """A blank QUERY text, or a blank question in a query file, is refused by name, never run nor a traceback."""
    single = {"agents": [{"id": "d", "role": "Decision Maker", "backbone": "qwen3-8b"}], "edges": [], "decision": "d"}
    write_json(tmp_path / "mas.json", single)
    done = agentbalance("run", "--mas", "mas.json", blank, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.strip()] == [
        "error: the QUERY text is blank: give a question, or --input FILE.jsonl"
    ]
    (tmp_path / "blank.jsonl").write_text(json.dumps({"id": "q1", "question": blank}) + "\n", encoding="utf-8")
    from_file = agentbalance("run", "--mas", "mas.json", "--input", "blank.jsonl", cwd=tmp_path)
    assert from_file.returncode == 2 and "blank.jsonl: line 1" in from_file.stderr and "question" in from_file.stderr
