"""Role libraries: load and validate roles/*.yaml (name, kind, description, prompt).

A role is data, never code; every library has exactly one decision role, whose answer is the MAS answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentbalance.errors import AgentBalanceError, describe_validation_error, require_unique_names
from agentbalance.files import read_yaml_mapping
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


class RoleSet:
    """An ordered role library with unique names and exactly one decision role."""

    def __init__(self, roles: Iterable[Role], domain: str | None = None, source: str = "<memory>") -> None:
        self.roles: tuple[Role, ...] = tuple(roles)
        self.domain = domain
        self.source = source
        require_unique_names([role.name for role in self.roles], source, "roles")
        deciders = [role.name for role in self.roles if role.kind is RoleKind.DECISION]
        if len(deciders) != 1:
            found = ", ".join(deciders) if deciders else "none"
            raise AgentBalanceError(
                f"{source}: a role library needs exactly one role of kind 'decision', found {found}"
            )
        self._by_name = {role.name: role for role in self.roles}

    @classmethod
    def load(cls, path: str | Path | None = None) -> RoleSet:
        """Load a role library; a bare domain name (general, math, code) means the shipped file."""
        if path is None:
            path = default_roles_path()
        elif not Path(path).exists() and (shipped_dir("roles") / f"{path}.yaml").is_file():
            path = shipped_dir("roles") / f"{path}.yaml"
        path = Path(path)
        raw = read_yaml_mapping(path, "role library")
        entries = raw.get("roles") if isinstance(raw.get("roles"), list) else []
        try:
            parsed = _RoleFile.model_validate(raw)
        except ValidationError as error:
            raise AgentBalanceError(describe_validation_error(error, str(path), entries)) from None
        return cls(parsed.roles, parsed.domain, source=str(path))

    def __iter__(self) -> Iterator[Role]:
        return iter(self.roles)

    def __len__(self) -> int:
        return len(self.roles)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Role:
        try:
            return self._by_name[name]
        except KeyError:
            raise AgentBalanceError(
                f"unknown role {name!r} in role library {self.source}; known: {', '.join(self.names)}"
            ) from None

    @property
    def names(self) -> list[str]:
        return [role.name for role in self.roles]

    @property
    def decision(self) -> Role:
        return next(role for role in self.roles if role.kind is RoleKind.DECISION)
