"""Role libraries: load and validate roles/*.yaml (name, kind, description, prompt).

A role is data, never code; every library has exactly one decision role, whose answer is the MAS answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentbalance.errors import AgentBalanceError
from agentbalance.files import load_validated
from agentbalance.named import NamedCollection
from agentbalance.shipped import default_roles_path, shipped_dir


class RoleKind(StrEnum):
    SOLVER = "solver"
    CRITIC = "critic"
    DECISION = "decision"


class Role(BaseModel):
    """One agent role: its system prompt and what it contributes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: RoleKind
    description: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    domains: tuple[str, ...] = ()

    @field_validator("name", "description", "prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class _RoleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    domain: str | None = None
    roles: list[Role] = Field(min_length=1)


class RoleSet(NamedCollection[Role]):
    """An ordered role library with unique names and exactly one decision role."""

    item_kind, collection_kind, section = "role", "role library", "roles"

    def __init__(self, roles: Iterable[Role], domain: str | None = None, source: str = "<memory>") -> None:
        super().__init__(roles, source)
        self.domain = domain
        deciders = [role.name for role in self.roles if role.kind is RoleKind.DECISION]
        if len(deciders) != 1:
            found = ", ".join(deciders) if deciders else "none"
            raise AgentBalanceError(
                f"{source}: a role library needs exactly one role of kind 'decision', found {found}"
            )

    @classmethod
    def load(cls, path: str | Path | None = None) -> RoleSet:
        """Load a role library; a bare domain name (general, math, code) means the shipped file."""
        if path is None:
            path = default_roles_path()
        elif not Path(path).exists() and (shipped_dir("roles") / f"{path}.yaml").is_file():
            path = shipped_dir("roles") / f"{path}.yaml"
        parsed = load_validated(path, "role library", _RoleFile, "roles")
        # a role without its own `domains` belongs to the library's domain (role-domain fit uses it)
        roles = [
            role.model_copy(update={"domains": (parsed.domain,)}) if parsed.domain and not role.domains else role
            for role in parsed.roles
        ]
        return cls(roles, parsed.domain, source=str(path))

    @property
    def roles(self) -> tuple[Role, ...]:
        return self._items

    @property
    def decision(self) -> Role:
        return next(role for role in self.roles if role.kind is RoleKind.DECISION)
