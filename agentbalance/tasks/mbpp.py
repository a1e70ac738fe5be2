"""MBPP (JSONL {task_id, text, code, test_list, test_setup_code?}, its sanitized variant, or the hub's mbpp) as queries.

It must never run a program in this process: solutions go to the sandbox with the setup code and the asserts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from agentbalance.errors import AgentBalanceError
from agentbalance.query import Query
from agentbalance.tasks.records import HubDataset, Record, jsonl_records, required_text, text_field, text_list

MBPP_HUB = HubDataset("google-research-datasets/mbpp", "full", "test")
_DEFINED = re.compile(r"^\s*def\s+(\w+)\s*\(", re.MULTILINE)
_CALLED = re.compile(r"(?<![\w.])(\w+)\s*\(")
_NOT_THE_FUNCTION = frozenset(
    {"assert", "set", "sorted", "list", "tuple", "dict", "abs", "round", "int", "float", "str", "len"}
)


def read_mbpp(path: Path) -> list[Query]:
    """mbpp.jsonl (the original: `text`, `test_setup_code`) or sanitized lines (`prompt`, `test_imports`)."""
    return mbpp_queries(jsonl_records(path, "MBPP"))


def mbpp_queries(records: Sequence[Record]) -> list[Query]:
    """MBPP records -> `mbpp-<task_id>` queries: the task text plus the first assert, showing the expected signature.

    The gold is the test program (setup code + every assert of test_list) in metadata "test"; `answer` stays None.
    """
    queries = []
    for record in records:
        where, raw = record
        tests = text_list(record, "test_list")
        if not tests:
            raise AgentBalanceError(f"{where}: field 'test_list' is empty")
        imports = raw.get("test_imports")
        setup = text_field(record, "test_setup_code", optional=True) or (
            "\n".join(imports) if isinstance(imports, list) else ""
        )
        reference = text_field(record, "code", optional=True)
        text = required_text(record, "text", "prompt").strip()
        queries.append(
            Query(
                id=f"mbpp-{required_text(record, 'task_id')}",
                question=f"{text}\nYour code should pass this test:\n{tests[0]}",
                domain="code",
                metadata={
                    "test": "\n".join(part for part in (setup.strip(), *tests) if part),
                    "function": _function_name(tests[0], reference),
                    "canonical_solution": reference,
                },
            )
        )
    return queries


def _function_name(first_test: str, reference: str | None) -> str | None:
    """The function the asserts call: one the reference solution defines, else the first call that is no builtin."""
    called = [name for name in _CALLED.findall(first_test) if name not in _NOT_THE_FUNCTION]
    defined = set(_DEFINED.findall(reference or ""))
    return next((name for name in called if name in defined), called[0] if called else None)
