"""An ordered collection of uniquely named items (backbones of a catalog, roles of a library).

Lookups of unknown names raise the user-facing error listing the known names; never a bare KeyError.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, Protocol, TypeVar

from agentbalance.errors import AgentBalanceError, require_unique_names


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


class NamedCollection(Generic[T]):
    """Items in file order; `item_kind` ("backbone") and `collection_kind` ("catalog") word the errors."""

    item_kind = "item"
    collection_kind = "collection"
    section = "items"

    def __init__(self, items: Iterable[T], source: str) -> None:
        self._items: tuple[T, ...] = tuple(items)
        self.source = source
        if not self._items:
            raise AgentBalanceError(f"{source}: a {self.collection_kind} needs at least one {self.item_kind}")
        require_unique_names([item.name for item in self._items], source, self.section)
        self._by_name = {item.name: item for item in self._items}

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> T:
        try:
            return self._by_name[name]
        except KeyError:
            raise AgentBalanceError(
                f"unknown {self.item_kind} {name!r} in {self.collection_kind} {self.source}; "
                f"known: {', '.join(self.names)}"
            ) from None

    @property
    def names(self) -> list[str]:
        return [item.name for item in self._items]
