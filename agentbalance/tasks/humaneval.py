"""HumanEval (JSONL {task_id, prompt, canonical_solution, test, entry_point}, or openai/openai_humaneval) as queries.

It must never run a program in this process: a completed program goes to the sandbox with the problem's tests.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agentbalance.query import Query
from agentbalance.tasks.formats import PROGRAM
from agentbalance.tasks.records import HubDataset, Record, jsonl_records, required_text, text_field
from agentbalance.tasks.scoring import extract_code

HUMANEVAL_HUB = HubDataset("openai/openai_humaneval", None, "test")


def read_humaneval(path: Path) -> list[Query]:
    """HumanEval.jsonl (or .jsonl.gz): one problem a line."""
    return humaneval_queries(jsonl_records(path, "HumanEval"))


def humaneval_queries(records: Sequence[Record]) -> list[Query]:
    """HumanEval records -> queries whose question is the function prompt verbatim; tests ride in metadata.

    The gold is the test suite (metadata "test", "entry_point"), not an answer string: `answer` stays None.
    """
    return [
        Query(
            id=required_text(record, "task_id"),
            question=required_text(record, "prompt"),
            domain="code",
            metadata={
                "entry_point": required_text(record, "entry_point"),
                "test": required_text(record, "test"),
                "canonical_solution": text_field(record, "canonical_solution", optional=True),
            },
        )
        for record in records
    ]


def complete_program(prompt: str, code: str, entry_point: str) -> str:
    """The runnable program: the prompt (its imports and helpers), then the completion.

    A completion that defines `entry_point` follows the prompt whole and replaces its docstring-only stub; one that
    is only the function's body is indented under the prompt's signature.
    """
    head = prompt if prompt.endswith("\n") else prompt + "\n"
    if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE):
        return f"{head}\n{code.rstrip()}\n"
    body = textwrap.dedent(code.strip("\n"))
    return head + textwrap.indent(body, "    ").rstrip() + "\n"


def read_humaneval_program(text: str, query: Query) -> str | None:
    """The completion's code completed with the prompt into a program that defines the entry point.

    The code is `extract_code`'s (fenced, or bare text defining the entry point); failing that, bare text that
    makes valid Python as the function's body (completion-style models answer with the body alone).
    """
    entry_point = query.metadata["entry_point"]
    code = extract_code(text, entry_point)
    if code is not None and code.strip():
        return complete_program(query.question, code, entry_point)
    if not text.strip():
        return None
    program = complete_program(query.question, text, entry_point)
    try:
        ast.parse(program)  # parsing only: nothing runs outside the sandbox
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return program


def _fenced_prompt(query: Query) -> str:
    newline = "" if query.question.endswith("\n") else "\n"
    return f"Complete this Python function:\n\n```python\n{query.question}{newline}```"


HUMANEVAL = replace(PROGRAM, name="humaneval", read=read_humaneval_program, present=_fenced_prompt)
