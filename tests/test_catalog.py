"""Catalogs: the shipped ones load, replay-world models.yaml files load, bad files say what and where."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from agentbalance.catalog import Backbone, Catalog, CostAssumptions
from agentbalance.errors import AgentBalanceError
from agentbalance.shipped import shipped_dir
from tests.conftest import REPLAY_WORLDS

GOOD_ENTRY = {
    "name": "tiny",
    "family": "test",
    "reasoning": False,
    "params_active_b": 2.0,
    "params_total_b": 2.0,
    "price_in": 0.1,
    "price_out": 0.4,
    "scores": {"mmlu": 50.0},
}


def write_catalog(tmp_path: Path, entries: list[dict], **top: object) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump({"backbones": entries, **top}), encoding="utf-8")
    return path


def test_default_catalog_has_fourteen_qwen_and_deepseek_backbones() -> None:
    catalog = Catalog.load()
    assert len(catalog) == 14
    assert {b.family.split("-")[0].rstrip("0123456789.") for b in catalog} <= {"qwen", "deepseek"}
    assert any(b.reasoning for b in catalog) and any(not b.reasoning for b in catalog)
    actives = [b.params_active_b for b in catalog]
    assert min(actives) == pytest.approx(1.7, abs=0.35)
    assert any(b.params_total_b and b.params_total_b >= 230 for b in catalog)
    for backbone in catalog:
        assert {"mmlu", "math", "humaneval"} <= set(backbone.scores), backbone.name
        assert backbone.source, backbone.name


def test_thinking_and_non_thinking_variants_share_a_model_id_but_differ_in_request() -> None:
    catalog = Catalog.load()
    by_model: dict[str, list[Backbone]] = {}
    for backbone in catalog:
        by_model.setdefault(backbone.model_id, []).append(backbone)
    pairs = [group for group in by_model.values() if len(group) == 2]
    assert pairs, "the Qwen3 hybrid models appear as a thinking and a non-thinking backbone"
    for first, second in pairs:
        assert first.reasoning != second.reasoning
        assert first.request != second.request


def test_inductive_extra_catalog_loads_with_the_papers_additions() -> None:
    extra = Catalog.load(shipped_dir("pools") / "qwen3-deepseek-extra.yaml")
    names = " ".join(extra.names).lower()
    for expected in ("next-80b", "deepseek-v3", "deepseek-r1"):
        assert expected in names


@pytest.mark.parametrize("world", REPLAY_WORLDS)
def test_replay_world_models_yaml_loads_through_the_catalog_code(shared_data: Path, world: str) -> None:
    catalog = Catalog.load(shared_data / world / "models.yaml")
    assert len(catalog) >= 10
    assert all(b.model_id == b.name for b in catalog), "no model id: it defaults to the name"


def test_model_id_defaults_to_the_name_and_request_is_kept(tmp_path: Path) -> None:
    path = write_catalog(
        tmp_path,
        [
            GOOD_ENTRY,
            {
                **GOOD_ENTRY,
                "name": "tiny-think",
                "model": "tiny",
                "reasoning": True,
                "request": {"enable_thinking": True},
            },
        ],
    )
    catalog = Catalog.load(path)
    assert catalog["tiny"].model_id == "tiny"
    assert catalog["tiny-think"].model_id == "tiny"
    assert catalog["tiny-think"].request == {"enable_thinking": True}


def test_triple_follows_the_documented_proxies() -> None:
    assumptions = CostAssumptions(
        prompt_tokens=1000, completion_tokens=200, reasoning_multiplier=4, ttft_s=0.5, tps_at_1b=1600, tps_cap=250
    )
    plain = Backbone.model_validate(
        {**GOOD_ENTRY, "params_active_b": 8.0, "params_total_b": 8.0, "scores": {"mmlu": 60, "math": 40}}
    )
    thinking = plain.model_copy(update={"reasoning": True})
    # TokCost = 100 * (0.1 * 1000 + 0.4 * 200) / 1e6 USD per 100 queries
    assert plain.tok_cost(assumptions) == pytest.approx(100 * (100 + 80) / 1e6)
    assert thinking.tok_cost(assumptions) == pytest.approx(100 * (100 + 0.4 * 800) / 1e6)
    # decode speed 1600 / 8 = 200 tok/s; Lat = 0.5 + 200 / 200
    assert plain.latency(assumptions) == pytest.approx(1.5)
    assert thinking.latency(assumptions) == pytest.approx(0.5 + 800 / 200)
    assert plain.perf(["mmlu", "math"]) == pytest.approx(50)
    small = plain.model_copy(update={"params_active_b": 1.0, "params_total_b": 1.0})
    assert small.decode_speed(assumptions) == 250, "the speed proxy is capped"
    given = plain.model_copy(update={"decode_tps": 50.0, "ttft_s": 1.0})
    assert given.latency(assumptions) == pytest.approx(1.0 + 200 / 50)


def test_catalog_assumptions_override_the_defaults(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, [GOOD_ENTRY], assumptions={"reasoning_multiplier": 6.0})
    assert Catalog.load(path).assumptions.reasoning_multiplier == 6.0


def test_perf_without_a_needed_score_names_the_backbone_and_the_file(tmp_path: Path) -> None:
    path = write_catalog(tmp_path, [GOOD_ENTRY, {**GOOD_ENTRY, "name": "other", "scores": {"math": 3}}])
    with pytest.raises(AgentBalanceError, match="no benchmark is scored for every backbone"):
        Catalog.load(path).triples()
    with pytest.raises(AgentBalanceError, match=r"catalog.yaml: backbone 'other' has no score for mmlu"):
        Catalog.load(path).triples(["mmlu"])
    unscored = {k: v for k, v in GOOD_ENTRY.items() if k != "scores"} | {"name": "bare"}
    path = write_catalog(tmp_path, [GOOD_ENTRY, unscored])
    with pytest.raises(AgentBalanceError, match=r"every backbone \(bare has no scores\)"):
        Catalog.load(path).triples()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"price_in": -1.0}, r"entry 1 \('bad'\), field price_in: Input should be greater than or equal to 0"),
        ({"prise_out": 1.0}, r"entry 1 \('bad'\), field prise_out: Extra inputs are not permitted"),
        ({"reasoning": "maybe"}, r"entry 1 \('bad'\), field reasoning"),
        ({"scores": {"mmlu": 140}}, r"field scores: Value error, score mmlu=140"),
        ({"params_active_b": 30.0}, r"params_active_b \(30.0\) exceeds params_total_b"),
        ({"params_active_b": None, "params_total_b": None}, "needs params_active_b or decode_tps"),
        ({"request": "enable_thinking"}, r"field request"),
    ],
)
def test_a_bad_entry_is_reported_with_file_entry_and_field(tmp_path: Path, change: dict, expected: str) -> None:
    bad = {**GOOD_ENTRY, "name": "bad", **change}
    path = write_catalog(tmp_path, [GOOD_ENTRY, bad])
    with pytest.raises(AgentBalanceError, match=expected) as caught:
        Catalog.load(path)
    assert str(path) in str(caught.value)


def test_missing_required_field_is_named(tmp_path: Path) -> None:
    entry = {key: value for key, value in GOOD_ENTRY.items() if key != "price_out"}
    with pytest.raises(AgentBalanceError, match=r"entry 0 \('tiny'\), field price_out: Field required"):
        Catalog.load(write_catalog(tmp_path, [entry]))


def test_duplicate_names_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match=r"entry 1: duplicate name 'tiny' \(first used by entry 0\)"):
        Catalog.load(write_catalog(tmp_path, [GOOD_ENTRY, GOOD_ENTRY]))


def test_missing_file_malformed_yaml_and_wrong_shapes_are_clear(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match="catalog file not found"):
        Catalog.load(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("backbones:\n  - name: [unclosed\n", encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"broken.yaml: line \d+, column \d+: malformed YAML"):
        Catalog.load(broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(AgentBalanceError, match="must be a YAML mapping at top level, found a list"):
        Catalog.load(listing)
    with pytest.raises(AgentBalanceError, match="backbones"):
        Catalog.load(write_catalog(tmp_path, []))


def test_unknown_backbone_lookup_lists_the_known_ones() -> None:
    catalog = Catalog.load()
    with pytest.raises(AgentBalanceError, match=r"unknown backbone 'gpt-9'.*known: "):
        catalog["gpt-9"]


def test_shipped_figures_are_finite_and_positive() -> None:
    for path in sorted(shipped_dir("pools").glob("*.yaml")):
        catalog = Catalog.load(path)
        for backbone in catalog:
            assert backbone.price_out > 0 and backbone.price_in > 0, (path.name, backbone.name)
            assert math.isfinite(backbone.latency(catalog.assumptions))
