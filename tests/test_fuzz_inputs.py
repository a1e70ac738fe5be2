"""Fuzzing the parsers of what users write by hand: catalogs, role libraries, MAS JSON, query files.

The property: any input either loads, or raises AgentBalanceError (one message saying what and where);
never another exception, which the CLI would show as a traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS
from agentbalance.query import read_queries
from agentbalance.roles import RoleSet
from tests.test_mas import DESIGN_EXAMPLE

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID_BACKBONE: dict[str, Any] = {
    "name": "small",
    "model": "small-model",
    "family": "test",
    "reasoning": False,
    "params_active_b": 8,
    "params_total_b": 8,
    "price_in": 0.5,
    "price_out": 1.5,
    "scores": {"math": 70.0, "mmlu": 60.0},
    "request": {"temperature": 0.2},
}
VALID_ROLE: dict[str, Any] = {
    "name": "Solver",
    "kind": "solver",
    "description": "solves",
    "prompt": "Solve the problem.",
    "domains": ["math"],
}
DECISION_ROLE = {**VALID_ROLE, "name": "Decider", "kind": "decision"}
VALID_MAS: dict[str, Any] = DESIGN_EXAMPLE  # the MAS of DESIGN.md, as tests/test_mas.py reads it

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.sampled_from([0, -1, 10**30, 10**400, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["", " ", "qwen3-8b", "Decision Maker", "a0", "a1", "solver", "decision", "http://x", "..", "\x00"]
    ),
)
values = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8) | st.sampled_from(["name", "id"]), children, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def mutated(draw: st.DrawFn, valid: dict[str, Any]) -> dict[str, Any]:
    """A valid mapping with a few keys replaced by anything, removed, or added: near misses find deep bugs."""
    document = json.loads(json.dumps(valid))
    keys = [*valid, "unexpected", "Name", ""]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(["replace", "delete", "nest"]))
        if action == "delete":
            document.pop(key, None)
        elif action == "replace":
            document[key] = draw(values)
        elif isinstance(document.get(key), dict) and document[key]:
            inner = draw(st.sampled_from(sorted(document[key])))
            document[key][inner] = draw(values)
        elif isinstance(document.get(key), list) and document[key]:
            index = draw(st.integers(min_value=0, max_value=len(document[key]) - 1))
            document[key][index] = draw(values)
    return document


NUMERIC_KEYS = ("params_active_b", "params_total_b", "price_in", "price_out")
numbers = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0, 1e-300, 1e300, 10**400, 2**63, -1])


def catalog_documents() -> st.SearchStrategy[Any]:
    """Mostly near-valid catalogs (one entry mutated beside a valid one), some anything at all."""
    other = {**VALID_BACKBONE, "name": "large", "model": "large-model", "params_active_b": 32, "params_total_b": 32}
    near = st.tuples(mutated(VALID_BACKBONE), st.just(other) | mutated(other)).map(list)
    odd_numbers = st.fixed_dictionaries(  # well-typed, but any number at all: finds overflow, inf, nan, 0
        {key: numbers for key in NUMERIC_KEYS}, optional={"decode_tps": numbers, "ttft_s": numbers}
    ).map(lambda twist: [{**VALID_BACKBONE, **twist, "scores": {"math": twist["price_in"]}}, other])
    entries = near | odd_numbers | st.lists(values, max_size=3)
    document = st.fixed_dictionaries(
        {"backbones": entries}, optional={"assumptions": mutated({"prompt_tokens": 600.0, "ttft_s": 0.5}) | values}
    )
    return document | values


def role_documents() -> st.SearchStrategy[Any]:
    """Mostly near-valid libraries (a solver and a decision role, either mutated), some anything at all."""
    near = st.tuples(mutated(VALID_ROLE) | st.just(VALID_ROLE), mutated(DECISION_ROLE) | st.just(DECISION_ROLE))
    roles = near.map(list) | st.lists(values, max_size=3)
    domain = st.none() | st.sampled_from(["math", "general", ""]) | values
    return st.fixed_dictionaries({"roles": roles}, optional={"domain": domain}) | values


def to_yaml(document: Any) -> str:
    """YAML of the document; values YAML cannot represent (2**63 is fine, NaN is .nan) are dumped as YAML does."""
    return yaml.safe_dump(document, allow_unicode=True)


def only_our_error(action: Callable[[], object]) -> None:
    """Run `action`; AgentBalanceError is an allowed outcome, with a non-empty message; anything else fails."""
    try:
        action()
    except AgentBalanceError as error:
        assert str(error).strip(), "an error must say what is wrong"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def load_catalog(path: Path) -> None:
    catalog = Catalog.load(path)
    for backbone in catalog:
        tok, lat = backbone.tok_cost(catalog.assumptions), backbone.latency(catalog.assumptions)
        assert math.isfinite(tok) and tok >= 0 and math.isfinite(lat) and lat > 0, backbone.name
        assert math.isfinite(backbone.call_cost_usd(1000, 1000))
        json.dumps(backbone.request, allow_nan=False)  # what the live world sends and hashes
    catalog.triples()  # Perf / TokCost / Lat: an error here is ours (no common benchmark), never a crash


# ----------------------------------------------------------------------------- catalogs


@FUZZ
@given(document=catalog_documents())
def test_a_catalog_document_loads_or_is_a_clear_error(folder: Path, document: Any) -> None:
    path = folder / "catalog.yaml"
    path.write_text(to_yaml(document), encoding="utf-8")
    only_our_error(lambda: load_catalog(path))


@FUZZ
@given(text=st.text(max_size=300) | st.binary(max_size=300))
def test_any_text_or_bytes_as_a_catalog_file_loads_or_is_a_clear_error(folder: Path, text: str | bytes) -> None:
    path = folder / "raw-catalog.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    only_our_error(lambda: load_catalog(path))


# ----------------------------------------------------------------------------- role libraries


@FUZZ
@given(document=role_documents())
def test_a_role_library_loads_or_is_a_clear_error(folder: Path, document: Any) -> None:
    path = folder / "roles.yaml"
    path.write_text(to_yaml(document), encoding="utf-8")

    def load() -> None:
        roles = RoleSet.load(path)
        assert roles.decision.kind == "decision"

    only_our_error(load)


@FUZZ
@given(text=st.text(max_size=300))
def test_any_text_as_a_role_file_loads_or_is_a_clear_error(folder: Path, text: str) -> None:
    path = folder / "raw-roles.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    only_our_error(lambda: RoleSet.load(path))


# ----------------------------------------------------------------------------- MAS JSON


@FUZZ
@given(document=mutated(VALID_MAS) | values | st.fixed_dictionaries({"agents": values, "decision": values}))
@example(document={"pool": 0, "agents": {"": None}, "edges": [None], "decision": "a1"})  # found by CI: not a list
@example(document={"pool": 0, "agents": True, "edges": [None], "decision": "a1"})
def test_a_mas_document_loads_or_is_a_clear_error(document: Any) -> None:
    catalog, roles = Catalog.load(), RoleSet.load("math")

    def load() -> None:
        mas = MAS.from_json(document, source="fuzz.json")
        assert MAS.from_json(json.loads(json.dumps(mas.to_json()))) == mas  # lossless once loaded
        assert len(mas.to_mermaid().splitlines()) == 1 + len(mas.agents) + len(mas.edges)  # names never break lines
        mas.check_against(catalog, roles)

    only_our_error(load)


@FUZZ
@given(text=st.text(max_size=300) | st.sampled_from(['{"agents": 1e999}', "[" * 5000, '{"pool": NaN}', "1" * 5000]))
def test_any_text_as_a_mas_file_loads_or_is_a_clear_error(folder: Path, text: str) -> None:
    path = folder / "mas.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    only_our_error(lambda: MAS.load(path))


# ----------------------------------------------------------------------------- query files (JSONL)


@FUZZ
@given(
    lines=st.lists(
        st.text(max_size=60) | values.map(json.dumps) | mutated({"id": "q1", "question": "?"}).map(json.dumps),
        max_size=5,
    )
)
def test_a_query_file_loads_or_names_the_bad_line(folder: Path, lines: list[str]) -> None:
    path = folder / "queries.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        queries = read_queries(path)
    except AgentBalanceError as error:
        message = str(error)
        assert message.startswith(str(path)) or "query file" in message, message
        if "line " not in message:
            assert "no query" in message or "cannot read" in message, message
    else:
        assert len({q.id for q in queries}) == len(queries)
