"""`serve --log-dir DIR`: every answered request written down, so that real traffic can be graded and trained on.

DIR/requests.jsonl holds one JSON object per answered request, appended and flushed as the request is answered (a
line is whole or absent; a server that restarts appends to the same file):

* `id` (the trace id, as in the response's `agentbalance` object), `created` (Unix seconds), `model` (the name the
  client asked for) and `budget` (the one served: `tok`, `lat`);
* `messages`: the conversation as the MAS read it (system messages and earlier turns, then the question last), in
  the shape a query file's `messages` take (`record --served DIR` reads the questions from here);
* `mas`: the MAS that answered (docs/mas.md's JSON);
* `answer`, `text`, `score` (None: ungraded), `cost_usd`, `latency_s`: the system's answer and what it cost;
* `agents`: every agent as it ran: id, role, backbone, inputs, its full text and parsed answer, tokens, cost, latency,
  error or the reason it was skipped.

It must never write a key (the server's or a world's) or who the client was: the log holds what was asked and
answered, and what it cost.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, TextIO

from agentbalance.budgets import Budget
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import Query
from agentbalance.runtime.trace import Trace
from agentbalance.worlds.served_answers import REQUESTS_FILE

__all__ = ["REQUESTS_FILE", "TrafficLog", "served_record"]
log = logging.getLogger(__name__)


def conversation_of(query: Query) -> list[dict[str, str]]:
    """The chat messages a query stands for: its context, then the question as the user's last message."""
    return [turn.model_dump() for turn in query.context] + [{"role": "user", "content": query.question}]


def served_record(
    trace_id: str, created: int, model: str, budget: Budget, query: Query, mas: MAS, trace: Trace
) -> dict[str, Any]:
    """One answered request as a line of the log (see the module's docstring)."""
    answered = trace.to_json(with_text=True)
    return {
        "id": trace_id,
        "created": created,
        "model": model,
        "budget": {"tok": budget.tok, "lat": budget.lat},
        "messages": conversation_of(query),
        "mas": mas.to_json(),
        "answer": answered["answer"],
        "text": answered["text"],
        "score": answered["score"],
        "cost_usd": answered["cost_usd"],
        "latency_s": answered["latency_s"],
        "agents": answered["agents"],
    }


class TrafficLog:
    """Appends answered requests to DIR/requests.jsonl. A write that fails (a full disk) is logged as an error and
    the request is still answered: the log serves later training, never the client waiting now."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / REQUESTS_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: TextIO | None = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by `close`)
        except OSError as error:
            raise AgentBalanceError(f"--log-dir: cannot write {self.path}: {error}") from None
        self._lock = threading.Lock()  # one line at a time, whichever thread settles a request

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            try:
                if self._file is None:  # closed at a shutdown, and the app started again (an embedding program)
                    self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by `close`)
                self._file.write(line)
                self._file.flush()
            except OSError as error:
                log.error("request %s was answered but not written to %s: %s", record.get("id"), self.path, error)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
