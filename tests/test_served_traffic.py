"""From served traffic to a replay world: `serve --log-dir` keeps what was asked and answered, and `record --task
served` grades it with a judge (reusing the answers already paid for) and, when asked, completes it with the other
backbones' answers. Spoken to by the real `openai` client and the CLI, over a live world on the loopback fake."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentbalance.encoders import TextEncoder
from agentbalance.worlds.replay import ReplayWorld
from tests.conftest import agentbalance
from tests.loopback_server import LoopbackServer
from tests.serving import SYSTEM, UPSTREAM_KEY, client, live_world, served, serving
from tests.test_judge import rated_by_backbone

QUESTIONS = [f"What is {i} - {i} + 4?" for i in range(4)]


def judged(request: object) -> bool:
    return "impartial judge" in request.body["messages"][0]["content"]  # type: ignore[attr-defined]


def test_served_traffic_is_graded_from_its_log_without_asking_again_and_completed_when_asked(
    trained_run: Path, encoder: TextEncoder, tmp_path: Path
) -> None:
    with LoopbackServer(api_keys={UPSTREAM_KEY}, responder=rated_by_backbone) as upstream:
        with serving(served(trained_run, live_world(upstream), encoder), log_dir=tmp_path / "traffic") as url:
            for question in QUESTIONS:
                messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
                client(url).chat.completions.create(model="agentbalance", messages=messages)  # type: ignore[arg-type]
        logged = [json.loads(line) for line in (tmp_path / "traffic" / "requests.jsonl").read_text().splitlines()]
        alone = [a for r in logged for a in r["agents"] if not a["inputs"] and a["skipped"] is None]
        assert len(logged) == 4 and alone

        env = {"AGENTBALANCE_API_KEY": UPSTREAM_KEY}
        record = ["record", "--world", "live", "--base-url", upstream.base_url, "--task", "served", "--data", "traffic"]
        record += ["--cache-dir", "cache", "--judge", "qwen3-8b"]
        before = len(upstream.requests)
        graded = agentbalance(*record, "--out", "graded", cwd=tmp_path, env=env)
        assert graded.returncode == 0, graded.stderr
        assert f"{len(alone)} answers reused from the served log" in graded.stdout
        asked = upstream.requests[before:]
        assert asked and all(judged(request) for request in asked), "only the judge is called: nothing asked again"

        world = ReplayWorld.load(tmp_path / "graded")
        assert {q.id for q in world.questions} == {r["id"] for r in logged}
        assert set(world.catalog.names) == {a["backbone"] for a in alone}, "only the backbones that were served"
        outcomes = pd.read_csv(tmp_path / "graded" / "outcomes.csv.gz")
        expected = [8 / 9 if name.startswith("qwen3-8b") else 1 / 3 for name in outcomes["model"]]
        assert outcomes["score"].tolist() == pytest.approx(expected), "the judge's score of each served answer"

        before = len(upstream.requests)
        completed = agentbalance(*record, "--ask-missing", "--out", "full", cwd=tmp_path, env=env)
        assert completed.returncode == 0, completed.stderr
        full = ReplayWorld.load(tmp_path / "full")
        rows = pd.read_csv(tmp_path / "full" / "outcomes.csv.gz")
        assert len(rows) == 4 * len(full.catalog.names) and len(full.catalog.names) > len(world.catalog.names)
        answered = [request for request in upstream.requests[before:] if not judged(request)]
        assert len(answered) == len(rows) - len(alone), "every answer not in the log asked once, the log's reused"
        sent = [" ".join(m["content"] for m in request.body["messages"]) for request in answered]  # type: ignore[index]
        assert all(SYSTEM in text for text in sent), "each question asked with its conversation"

        misplaced = agentbalance(*record, "--task", "jsonl", "--ask-missing", "--out", "x", cwd=tmp_path, env=env)
        assert misplaced.returncode == 2 and "use it with --task served" in misplaced.stderr


def test_a_damaged_served_log_is_one_error_naming_its_line(tmp_path: Path) -> None:
    from agentbalance.errors import AgentBalanceError
    from agentbalance.tasks.served_questions import read_served_questions
    from agentbalance.worlds.served_answers import read_served_answers

    good = {"id": "t1", "messages": [{"role": "user", "content": "Hi?"}], "agents": []}
    for line, problem in [
        ({"messages": good["messages"]}, "line 2: a logged request needs its `id`"),
        ({"id": "t2", "messages": "Hi?"}, "line 2: a logged request needs its `messages`"),
        ({"id": "t2", "messages": [{"role": "assistant", "content": "Hi"}]}, "it must be the user's question"),
        (good, r"line 2: duplicate request id 't1' \(first on line 1\)"),
    ]:
        (tmp_path / "requests.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(line) + "\n")
        with pytest.raises(AgentBalanceError, match=problem):
            read_served_questions(tmp_path)
    agent = {"id": "a", "backbone": "b", "inputs": [], "text": "x", "error": None, "skipped": None, "cost_usd": "?"}
    (tmp_path / "requests.jsonl").write_text(json.dumps(good | {"agents": [agent]}) + "\n")
    with pytest.raises(AgentBalanceError, match=r"line 1: agent 'a' is damaged"):
        read_served_answers(tmp_path)
    with pytest.raises(AgentBalanceError, match=r"no requests\.jsonl there"):
        read_served_questions(tmp_path / "elsewhere")
