"""A name -> item registry whose lookup error lists the valid names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """A lookup of a name that is not registered; str() is a one-line, user-facing message."""

    def __init__(self, what: str, name: str, valid: Iterable[str]):
        self.what, self.name, self.valid = what, name, list(valid)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown {self.what} {self.name!r}; valid: {', '.join(self.valid)}"


class Registry(Generic[T]):
    def __init__(self, what: str):
        self.what = what
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.what} {name!r} registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownName(self.what, name, self._items) from None

    def names(self) -> list[str]:
        return list(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items


def pick(what: str, requested: Iterable[str], valid: Iterable[str]) -> list[str]:
    """Validate a user's subset of names, keeping the catalogue's order."""
    valid = list(valid)
    requested = list(requested)
    for name in requested:
        if name not in valid:
            raise UnknownName(what, name, valid)
    return [name for name in valid if name in requested]
