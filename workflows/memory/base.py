"""The plumbing of the in-memory store: its clock, its lock, and one method per kind of request."""

from __future__ import annotations

import base64
import functools
import itertools
import json
import threading
import time
from typing import Any, Callable, Iterator, TypeVar

from ..core.storage.rules import read_fairly
from ..core.storage.writes.base import WritesBase
from ..errors import SerializationError, StorageError
from ..settings import Settings
from .blobs import MemoryBlobs, StoreBlobs
from .tables import Item, PageAt, Table, Transactions

BATCH_GET = 100  # keys per BatchGetItem request
T = TypeVar("T")
#: ``interceptor(name, apply)``: performs (or not) one request; see :class:`MemoryStore`.
Interceptor = Callable[[str, Callable[[], Any]], Any]


def to_json(value: Any) -> str:
    """Compact JSON for the store's own small structured fields."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def encode_cursor(key: Item | None) -> str | None:
    """A page cursor: the last evaluated key in DynamoDB's wire format, base64 JSON."""
    if not key:
        return None
    wire = {k: {"S": v} if isinstance(v, str) else {"N": json.dumps(v)} for k, v in key.items()}
    return base64.urlsafe_b64encode(json.dumps(wire).encode()).decode()


def decode_cursor(cursor: str | None, keys: frozenset[str], numbers: frozenset[str] = frozenset()) -> Item | None:
    """Decode a page cursor (its attributes must be ``keys``; ``numbers`` are of type N)."""
    if not cursor:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError):
        value = None
    if not isinstance(value, dict) or set(value) != keys or not all(
            isinstance(v, dict) and len(v) == 1 and isinstance(v.get("S", v.get("N")), str) for v in value.values()):
        raise SerializationError(f"invalid cursor {cursor!r}")
    key: Item = {}
    for name, typed in value.items():
        if ("N" in typed) != (name in numbers):
            raise StorageError("list failed: ValidationException (the cursor's key types do not match)")
        try:
            key[name] = json.loads(typed["N"]) if "N" in typed else typed["S"]
        except ValueError:
            raise StorageError("list failed: ValidationException (a cursor number is invalid)") from None
        if "N" in typed and (isinstance(key[name], bool) or not isinstance(key[name], (int, float))):
            raise StorageError("list failed: ValidationException (a cursor number is invalid)")
    return key



class MemoryBase(WritesBase):
    """Settings, clock and the request methods every part of the in-memory store uses."""

    def __init__(self, settings: Settings, clock: Callable[[], float] | Any = time.time) -> None:
        self.settings = settings
        self.clock: Callable[[], float] = clock.now if hasattr(clock, "now") else clock
        self.interceptor: Interceptor | None = None
        self._lock = threading.RLock()
        self._tokens = itertools.count(1)
        self._transactions = Transactions()
        self.blob_objects = MemoryBlobs(self.clock)  # shared by every view (copy) of this store

    @property
    def blobs(self) -> StoreBlobs:
        """The Blobs port of this store: large payloads, requests through this view's interceptor."""
        return StoreBlobs(self.blob_objects, self._request)

    # -- requests -------------------------------------------------------------------------------------
    def now(self) -> float:
        """The store's clock, in epoch seconds."""
        return self.clock()

    def _request(self, name: str, apply: Callable[[], T]) -> T:
        """Perform one request: ``apply`` under the lock, through the interceptor if there is one."""
        interceptor = self.interceptor
        if interceptor is None:  # (what atomic does, without making it)
            with self._lock:
                try:
                    return apply()
                except StorageError as exc:
                    raise StorageError(f"{name} failed: {exc}") from exc

        def atomic() -> T:
            with self._lock:
                try:
                    return apply()
                except StorageError as exc:  # a request DynamoDB refuses, named as the DynamoDB store names it
                    raise StorageError(f"{name} failed: {exc}") from exc

        return interceptor(name, atomic)

    def _pages(self, name: str, table: Table, hash_value: Any, **query: Any) -> Iterator[Item]:
        """The items of a Query, one request per page, fetched as they are consumed."""
        start, limit = None, query.pop("limit", None)
        while True:
            read = functools.partial(table.query, hash_value, page=PageAt(limit, start), **query)
            page, start = self._request(name, read)
            yield from page
            if start is None:
                return

    def _read_shards(self, shards: int, limit: int, query: Callable[[str], Iterator[Item]]) -> list[Item]:
        """Up to ``limit`` items of a sharded index, read fairly (as the DynamoDB store does)."""
        return read_fairly(shards, limit, query)

    def _limited(self, name: str, table: Table, hash_value: Any, limit: int, start: Item | None,
                 **query: Any) -> tuple[list[Item], Item | None]:
        """Up to ``limit`` items from pages of Limit ``limit``, and the key to resume after them."""
        found: list[Item] = []
        while limit < 0 or len(found) < limit:  # a negative limit: the request is refused
            page, last = self._request(name, functools.partial(table.query, hash_value, page=PageAt(limit, start),
                                                               **query))
            taken = page[:limit - len(found)]
            found += taken
            if len(taken) < len(page):  # stopped inside the page: resume after the last item returned
                names = table.key_names(query.get("index"))
                return found, {k: taken[-1][k] for k in names}
            if last is None:
                return found, None
            start = last
        return found, start

    def _batch_get(self, name: str, table: Table, keys: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], Item]:
        """BatchGetItem requests of up to 100 distinct keys each."""
        unique = list(dict.fromkeys(keys))
        found: dict[tuple[Any, ...], Item] = {}
        for first in range(0, len(unique), BATCH_GET):
            chunk = unique[first:first + BATCH_GET]
            found.update(self._request(name, functools.partial(_get_many, table, chunk)))
        return found


def _get_many(table: Table, keys: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], Item]:
    """One BatchGetItem: the items that exist among ``keys``."""
    return {key: item for key in keys if (item := table.get(*key)) is not None}

