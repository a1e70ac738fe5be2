"""Role libraries: the shipped ones are complete, and bad files say what and where."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agentbalance.errors import AgentBalanceError
from agentbalance.roles import RoleKind, RoleSet

ANSWER_FORMAT = {"general": "Answer:", "math": "\\boxed", "code": "```python"}


@pytest.mark.parametrize("domain", ["general", "math", "code"])
def test_shipped_role_library_has_experts_a_critic_and_one_decision_maker(domain: str) -> None:
    roles = RoleSet.load(domain)
    assert 5 <= len(roles) <= 8
    kinds = [role.kind for role in roles]
    assert kinds.count(RoleKind.DECISION) == 1
    assert kinds.count(RoleKind.SOLVER) >= 3
    assert kinds.count(RoleKind.CRITIC) >= 1
    assert roles.decision.kind is RoleKind.DECISION
    for role in roles:
        assert ANSWER_FORMAT[domain] in role.prompt, f"{role.name} states the answer format"


def test_general_library_has_a_psychologist_for_the_role_fit_experiments() -> None:
    assert "Psychologist" in RoleSet.load("general")


def write_roles(tmp_path: Path, roles: list[dict]) -> Path:
    path = tmp_path / "roles.yaml"
    path.write_text(yaml.safe_dump({"domain": "test", "roles": roles}), encoding="utf-8")
    return path


SOLVER = {"name": "Solver", "kind": "solver", "description": "solves", "prompt": "Solve it."}
DECIDER = {"name": "Decider", "kind": "decision", "description": "decides", "prompt": "Decide."}


def test_a_library_needs_exactly_one_decision_role(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match="exactly one role of kind 'decision', found none"):
        RoleSet.load(write_roles(tmp_path, [SOLVER]))
    second = {**DECIDER, "name": "Judge"}
    with pytest.raises(AgentBalanceError, match="found Decider, Judge"):
        RoleSet.load(write_roles(tmp_path, [SOLVER, DECIDER, second]))


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({**SOLVER, "kind": "boss"}, r"entry 0 \('Solver'\), field kind: Input should be 'solver', 'critic' or"),
        ({**SOLVER, "promt": "x"}, r"field promt: Extra inputs are not permitted"),
        ({**SOLVER, "prompt": "   "}, r"field prompt: Value error, must not be blank"),
    ],
)
def test_a_bad_role_is_reported_with_file_entry_and_field(tmp_path: Path, bad: dict, expected: str) -> None:
    path = write_roles(tmp_path, [bad, DECIDER])
    with pytest.raises(AgentBalanceError, match=expected) as caught:
        RoleSet.load(path)
    assert str(path) in str(caught.value)


def test_duplicate_role_names_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(AgentBalanceError, match="duplicate name 'Solver'"):
        RoleSet.load(write_roles(tmp_path, [SOLVER, SOLVER, DECIDER]))


def test_unknown_role_lookup_lists_the_known_ones() -> None:
    with pytest.raises(AgentBalanceError, match=r"unknown role 'Wizard'.*known: Mathematician"):
        RoleSet.load("math")["Wizard"]
