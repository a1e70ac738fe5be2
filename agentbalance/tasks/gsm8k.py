"""GSM8K grade-school math word problems (JSONL {question, answer}, or openai/gsm8k) as numeric queries.

It must never take the gold from anywhere but after the solution's "####" marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.tasks.records import HubDataset, Record, jsonl_records, required_text

GSM8K_HUB = HubDataset("openai/gsm8k", "main", "test")
GOLD_MARKER = "####"


def read_gsm8k(path: Path) -> list[Query]:
    """The original test.jsonl (or any split): one {question, answer} a line."""
    return gsm8k_queries(jsonl_records(path, "GSM8K"))


def gsm8k_queries(records: Sequence[Record]) -> list[Query]:
    """GSM8K records -> `gsm8k-<index>` queries; gold = the number after "####" (thousands separators dropped)."""
    queries = []
    for index, record in enumerate(records):
        solution = required_text(record, "answer")
        rationale, marker, gold = solution.rpartition(GOLD_MARKER)
        gold = gold.strip().replace(",", "")
        if not marker or not gold:
            raise AgentBalanceError(f"{record[0]}: the answer has no final number after {GOLD_MARKER!r}")
        queries.append(
            Query(
                id=f"gsm8k-{index}",
                question=required_text(record, "question"),
                answer=gold,
                domain="math",
                metadata={"solution": rationale.strip()},
            )
        )
    return queries
