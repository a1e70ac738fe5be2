"""The MAS type: validation with clear errors, lossless JSON, networkx and mermaid views."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbalance.catalog import Catalog
from agentbalance.errors import AgentBalanceError
from agentbalance.mas import MAS, Agent
from agentbalance.roles import RoleSet

DESIGN_EXAMPLE = {
    "query_id": "q1",
    "pool": 0,
    "agents": [
        {"id": "a0", "role": "Mathematician", "backbone": "qwen3-8b"},
        {"id": "a1", "role": "Decision Maker", "backbone": "qwen3-32b"},
    ],
    "edges": [["a0", "a1"]],
    "decision": "a1",
}


def test_the_design_example_round_trips_losslessly_with_extra_keys() -> None:
    document = {**DESIGN_EXAMPLE, "note": {"by": "hand"}, "budget": 0.5}
    mas = MAS.from_json(document)
    assert mas.to_json() == document
    assert MAS.from_json(json.loads(json.dumps(mas.to_json()))) == mas


def test_a_lone_decision_agent_is_a_valid_mas() -> None:
    mas = MAS([Agent(id="d", role="Decision Maker", backbone="qwen3-1.7b")], [], "d")
    assert mas.topological_order() == ("d",) and mas.depth() == 1


def layered() -> MAS:
    agents = [Agent(id=f"s{i}", role="Mathematician", backbone="qwen3-8b") for i in range(3)]
    agents += [
        Agent(id="v", role="Verifier", backbone="qwen3-14b"),
        Agent(id="d", role="Decision Maker", backbone="qwen3-32b"),
    ]
    edges = [("s0", "v"), ("s1", "v"), ("s2", "d"), ("v", "d")]
    return MAS(agents, edges, "d")


def test_views_networkx_order_depth_and_mermaid() -> None:
    mas = layered()
    graph = mas.to_networkx()
    assert graph.nodes["d"]["decision"] and graph.nodes["v"]["role"] == "Verifier"
    order = mas.topological_order()
    assert order.index("v") > order.index("s0") and order[-1] == "d"
    assert mas.depth() == 3
    assert mas.predecessors("d") == ("s2", "v")
    mermaid = mas.to_mermaid()
    assert mermaid.startswith("flowchart LR") and mermaid.count("-->") == 4 and "[[" in mermaid


def test_any_catalog_backbone_and_library_role_may_be_used_even_for_the_decision_agent() -> None:
    mas = MAS.from_json(
        {"agents": [{"id": "x", "role": "Mathematician", "backbone": "qwen3-235b-a22b-think"}], "decision": "x"}
    )
    mas.check_against(Catalog.load(), RoleSet.load("math"))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"edges": [["a0", "a1"], ["a1", "a0"]]}, "cycle: a0 -> a1 -> a0"),
        ({"edges": [["a0", "zz"]]}, "edge 0 ['a0', 'zz'] names unknown agent 'zz'"),
        ({"edges": [["a0", "a0"], ["a0", "a1"]]}, "self-loop on 'a0'"),
        ({"edges": [["a0", "a1"], ["a0", "a1"]]}, "is repeated"),
        ({"decision": "a9"}, "decision agent 'a9' is not one of the agents"),
        ({"decision": "a0"}, "decision agent 'a0' has outgoing edges"),
        ({"edges": []}, "agent(s) a0 do not reach the decision agent 'a1'"),
        ({"agents": []}, "agents"),
        ({"agents": [{"id": "a0", "role": "R"}]}, "field backbone: Field required"),
    ],
)
def test_invalid_mas_documents_are_rejected_clearly(change: dict, expected: str) -> None:
    with pytest.raises(AgentBalanceError) as caught:
        MAS.from_json({**DESIGN_EXAMPLE, **change}, source="my.json")
    assert expected in str(caught.value) and "my.json" in str(caught.value)


def test_duplicate_agent_ids_are_rejected() -> None:
    agents = [{"id": "a", "role": "R", "backbone": "b"}, {"id": "a", "role": "R", "backbone": "b"}]
    with pytest.raises(AgentBalanceError, match="duplicate name 'a'"):
        MAS.from_json({"agents": agents, "decision": "a"})


def test_unknown_role_or_backbone_names_the_agent() -> None:
    catalog, roles = Catalog.load(), RoleSet.load("math")
    bad_backbone = MAS.from_json(
        {
            **DESIGN_EXAMPLE,
            "agents": [DESIGN_EXAMPLE["agents"][0], {"id": "a1", "role": "Decision Maker", "backbone": "gpt-9"}],
        }
    )
    with pytest.raises(AgentBalanceError, match="agent 'a1' uses unknown backbone 'gpt-9'"):
        bad_backbone.check_against(catalog, roles)
    bad_role = MAS.from_json(
        {
            **DESIGN_EXAMPLE,
            "agents": [{"id": "a0", "role": "Wizard", "backbone": "qwen3-8b"}, DESIGN_EXAMPLE["agents"][1]],
        }
    )
    with pytest.raises(AgentBalanceError, match="agent 'a0' uses unknown role 'Wizard'"):
        bad_role.check_against(catalog, roles)


def test_load_reports_malformed_json_with_position(tmp_path: Path) -> None:
    path = tmp_path / "mas.json"
    path.write_text('{"agents": [}', encoding="utf-8")
    with pytest.raises(AgentBalanceError, match=r"mas.json: line 1, column 13: malformed JSON"):
        MAS.load(path)
    with pytest.raises(AgentBalanceError, match="MAS file not found"):
        MAS.load(tmp_path / "none.json")
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(AgentBalanceError, match="must be a JSON object"):
        MAS.load(path)
