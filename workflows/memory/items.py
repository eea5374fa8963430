"""A table's items by primary key, with the keys of each Query partition kept beside them.

A Query reads one partition (the items of one hash key value, of the table or of an index);
keeping each partition's keys as the items change spares every Query a scan of the whole
table. Items are replaced whole, never changed in place (the tables copy on every write).
"""

from __future__ import annotations

from typing import Any, Hashable, Iterable

Item = dict[str, Any]
Key = tuple[Any, ...]
#: Per index (None: the table itself), per hash key value: the keys of the items in that partition.
Partitions = dict[str | None, dict[Any, dict[Key, None]]]
_MISSING: Any = object()


def hashable(value: Any) -> bool:
    return type(value) is str or isinstance(value, Hashable)


class Items(dict[Key, Item]):
    """``dict`` of key to item that keeps each index partition's keys, and a count of its changes.

    Args:
        indexes: per index name (None: the table itself), its (hash, range) attribute names (the
            range None if there is none); an item is in a partition of an index when it has both,
            as in a sparse global secondary index.
    """

    def __init__(self, indexes: dict[str | None, tuple[str, str | None]]) -> None:
        super().__init__()
        self.indexes = indexes
        self.parts: Partitions = {name: {} for name in indexes}
        #: How many changes the items have seen (an unchanged count: the same items).
        self.changes = 0

    def partition(self, index: str | None, hash_value: Any) -> dict[Key, None]:
        """The keys of the items in one partition (do not change it)."""
        return self.parts[index].get(hash_value) or {}

    def _enter(self, key: Key, item: Item) -> None:
        for name, (hash_name, range_name) in self.indexes.items():
            value = item.get(hash_name)
            if value is not None and (range_name is None or range_name in item) and hashable(value):
                self.parts[name].setdefault(value, {})[key] = None

    def _leave(self, key: Key, item: Item) -> None:
        for name, (hash_name, range_name) in self.indexes.items():
            value = item.get(hash_name)
            if value is not None and (range_name is None or range_name in item) and hashable(value):
                self._drop(name, value, key)

    def _drop(self, index: str | None, value: Any, key: Key) -> None:
        part = self.parts[index].get(value)
        if part is not None:
            part.pop(key, None)
            if not part:
                del self.parts[index][value]

    def __setitem__(self, key: Key, item: Item) -> None:
        old = super().get(key, _MISSING)
        if old is not _MISSING:
            self._leave(key, old)
        super().__setitem__(key, item)
        self._enter(key, item)
        self.changes += 1

    def __delitem__(self, key: Key) -> None:
        item = super().pop(key)
        self._leave(key, item)
        self.changes += 1

    def pop(self, key: Key, *default: Any) -> Any:  # type: ignore[override]
        """Remove ``key`` and return its item (or ``default``)."""
        item = super().pop(key, _MISSING)
        if item is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        self._leave(key, item)
        self.changes += 1
        return item

    def popitem(self) -> tuple[Key, Item]:
        """Remove and return the last (key, item)."""
        key, item = super().popitem()
        self._leave(key, item)
        self.changes += 1
        return key, item

    def setdefault(self, key: Key, default: Any = None) -> Any:
        """The item at ``key``, storing ``default`` there first if there is none."""
        if key not in self:
            self[key] = default
        return super().__getitem__(key)

    def update(self, *others: Any, **more: Any) -> None:  # type: ignore[override]
        """Store every (key, item) of ``others``."""
        for other in (*others, more):
            pairs: Iterable[tuple[Any, Item]] = other.items() if hasattr(other, "items") else other
            for key, item in pairs:
                self[key] = item

    def clear(self) -> None:
        """Remove every item."""
        super().clear()
        self.parts = {name: {} for name in self.parts}
        self.changes += 1

    def __ior__(self, other: Any) -> Items:  # type: ignore[override,misc]
        self.update(other)
        return self
