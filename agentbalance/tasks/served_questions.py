"""The questions of a served-traffic log (`serve --log-dir DIR`, its DIR/requests.jsonl) as a task: `--task served
--data DIR` asks them anew, so `record` can grade what was served and record the other backbones' answers.

Each line's `messages` is the conversation the MAS read: its last message the question, the ones before it the
context every agent reads. The questions have no gold answer (a judge grades them: `--judge`). It must never read
the answers the log holds (`worlds.served_answers` does, for `record` to reuse them).
"""

from __future__ import annotations

from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.files import read_jsonl_objects
from agentbalance.query import Query, read_conversation, unique_by_id
from agentbalance.tasks.user_jsonl import resolve_domain

REQUESTS_FILE = "requests.jsonl"


def served_log_file(path: Path) -> Path:
    """The log file of `path`: a `--log-dir` folder (its requests.jsonl) or the file itself."""
    path = Path(path)
    file = path / REQUESTS_FILE if path.is_dir() else path
    if not file.is_file():
        raise AgentBalanceError(f"served log {path}: no {REQUESTS_FILE} there (give the folder of `serve --log-dir`)")
    return file


def read_served_questions(path: Path) -> list[Query]:
    """Each logged request as a query: its id (the trace id), question and context, without gold; a line that is
    not a logged request is an error naming the line."""
    file = served_log_file(path)

    def numbered() -> list[tuple[int, Query]]:
        queries = []
        for number, record in read_jsonl_objects(file, "served log"):
            where = f"{file}: line {number}"
            if not isinstance(record.get("id"), str) or not record["id"]:
                raise AgentBalanceError(f"{where}: a logged request needs its `id`, a non-empty text")
            if not isinstance(record.get("messages"), list):
                raise AgentBalanceError(f"{where}: a logged request needs its `messages`, a list of chat messages")
            question, context = read_conversation(record["messages"], f"{where}: messages")
            query = Query(id=record["id"], question=question, context=context, metadata={"source": "served"})
            queries.append((number, query.model_copy(update={"domain": resolve_domain(query)})))
        return queries

    return unique_by_id(numbered(), file, "request id", "request")
