"""In-memory tables that behave like DynamoDB's where the store relies on it.

Items are plain dicts of attribute name to value: ``str``, ``int``/``float``,
``bool``, a ``set`` of numbers (a number set), or a ``dict`` (a map). A ``None``
value or an empty set means "no attribute", as in DynamoDB, which stores neither.

Every write is staged against a copy and committed only once every condition held
and every resulting item fits in 400 KB, so a failed request changes nothing; a refusal
names each op's cancellation reason, in order. Callers serialise requests (the store
holds one lock around each). The store's writes reach these tables as write plans
(``workflows.core.storage.plans``), which ``workflows.memory.plans`` turns into these ops.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Union

from ..core.storage.plans import CONDITION_FAILED, item_size
from ..errors import StorageError
from ..settings import DYNAMODB_ITEM_LIMIT
from .items import Items, hashable

Item = dict[str, Any]
#: A condition expression: evaluated on the current item ({} when there is none).
Condition = Callable[[Item], bool]
#: An update expression: changes a copy of the current item in place.
Change = Callable[[Item], None]

#: Items by attribute name, then by that attribute's value.
Grouped = dict[str, dict[Any, list[Item]]]

PAGE_BYTES = 1024 * 1024  # a Query page stops after 1 MB of items
TOKENS_KEPT = 10_000  # client request tokens of recent transactions (DynamoDB keeps 10 minutes' worth)


class ConditionFailed(Exception):
    """A write's condition did not hold, so nothing changed (ConditionalCheckFailed).

    ``reasons``: per op of the request, in order, ``ConditionalCheckFailed`` or None.
    """

    def __init__(self, reasons: list[str | None]) -> None:
        super().__init__(reasons)
        self.reasons = reasons


def copy_value(value: Any) -> Any:
    """A copy of a value that shares nothing mutable with it."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool:
        return value
    if isinstance(value, dict):
        return {k: copy_value(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return set(value)
    if isinstance(value, list):
        return [copy_value(v) for v in value]
    return value


def clean(item: Item) -> Item:
    """A copy of ``item`` without the attributes DynamoDB would not store (None, empty sets)."""
    copied: Item = {}
    for k, v in item.items():
        kind = type(v)
        if kind is str or kind is int or kind is float or kind is bool:
            copied[k] = v
        elif isinstance(v, enum.Enum):  # a state is stored as its word, as DynamoDB stores it
            copied[k] = v.value
        elif v is not None and not (isinstance(v, (set, frozenset)) and not v):
            copied[k] = copy_value(v)
    return copied


@dataclass(frozen=True)
class Index:
    """A global secondary index: items having both attributes are in it (sparse)."""

    hash: str
    range: str


class IndexLag:
    """Global secondary indexes that lag behind their table's writes, as DynamoDB's do (they are
    eventually consistent; moto's are not). Off unless a table's :attr:`Table.lag` is set (the
    simulator sets it): a write reaches the indexes ``delay()`` seconds after it applied, each
    item's writes in their order, so a Query on an index may not yet see an item written,
    updated or deleted within the last ``delay()`` seconds (it sees the item as it was).

    Args:
        clock: the true time, epoch seconds.
        delay: the propagation delay of one write, seconds (drawn per write).
    """

    def __init__(self, clock: Callable[[], float], delay: Callable[[], float]) -> None:
        self.clock, self.delay = clock, delay
        #: Per key with writes not yet everywhere in the indexes: (visible from, item or None), oldest first.
        self.states: dict[tuple[Any, ...], list[tuple[float, Item | None]]] = {}
        self._writes = 0  # writes so far (the states change only with a write or the time)
        #: (time, writes, pending, pending by hash key value): what :meth:`_pending` found last.
        self._shown: tuple[float, int, dict[tuple[Any, ...], Item | None], Grouped] | None = None

    def wrote(self, key: tuple[Any, ...], before: Item | None, after: Item | None) -> None:
        """A write changed the item at ``key`` from ``before`` to ``after`` (None: absent)."""
        now = self.clock()
        self._writes += 1
        states = self.states.setdefault(key, [(float("-inf"), None if before is None else clean(before))])
        states.append((max(now + self.delay(), states[-1][0]), None if after is None else clean(after)))
        self._settle(key, now)

    def shown(self, items: dict[tuple[Any, ...], Item], keys: Iterable[tuple[Any, ...]], hk: str,
              hash_value: Any) -> list[Item]:
        """The items at ``keys`` (the keys of the partition ``hash_value`` of attribute ``hk``), and
        those of that partition at every key with a write not yet in the indexes, as the indexes show
        them now: those :meth:`view` shows there (a hashable ``hash_value``)."""
        pending, groups = self._pending()
        group = groups.get(hk)
        if group is None:  # the pending items by their value of hk (unhashable values equal no hash key)
            group = groups[hk] = {}
            for item in pending.values():
                if item is not None and (value := item.get(hk)) is not None and hashable(value):
                    group.setdefault(value, []).append(item)
        return [items[key] for key in keys if key not in pending] + group.get(hash_value, [])

    def _pending(self) -> tuple[dict[tuple[Any, ...], Item | None], Grouped]:
        """Per key with a write not yet everywhere in the indexes, the item they show now (None:
        absent), settling the states as :meth:`view` does; the same until the clock moves or a write."""
        now = self.clock()
        if self._shown is not None and self._shown[0] == now and self._shown[1] == self._writes:
            return self._shown[2], self._shown[3]  # settled at this time already: nothing changed
        pending: dict[tuple[Any, ...], Item | None] = {}
        for key, states in list(self.states.items()):
            while len(states) > 1 and states[1][0] <= now:  # as _settle does
                states.pop(0)
            if len(states) == 1:
                del self.states[key]
            # the last state visible now: the first, unless the clock went back
            first_at, first = states[0]
            pending[key] = first if first_at <= now else [item for at, item in states if at <= now][-1]
        self._shown = (now, self._writes, pending, {})
        return pending, self._shown[3]

    def view(self, items: dict[tuple[Any, ...], Item]) -> dict[tuple[Any, ...], Item]:
        """The items as the indexes show them now."""
        now = self.clock()
        self._shown = None  # it settles states too
        shown = dict(items)
        for key in list(self.states):
            states = self._settle(key, now)
            seen = [item for at, item in states if at <= now][-1]
            if seen is None:
                shown.pop(key, None)
            else:
                shown[key] = seen
        return shown

    def _settle(self, key: tuple[Any, ...], now: float) -> list[tuple[float, Item | None]]:
        """Forget the states of the item the indexes no longer show (all of them once the last is visible)."""
        states = self.states[key]
        while len(states) > 1 and states[1][0] <= now:
            states.pop(0)
        if len(states) == 1:
            del self.states[key]
        return states


@dataclass(frozen=True)
class PageAt:
    """Where a Query page starts and how many items it evaluates (DynamoDB's ExclusiveStartKey, Limit)."""

    limit: int | None = None
    start: Item | None = None


FIRST_PAGE = PageAt()


class Table:
    """One table: items by primary key, with its global secondary indexes."""

    def __init__(self, name: str, hash_key: str, range_key: str | None = None,
                 indexes: dict[str, Index] | None = None) -> None:
        self.name, self.hash_key, self.range_key = name, hash_key, range_key
        self.indexes = indexes or {}
        parts: dict[str | None, tuple[str, str | None]] = {None: (hash_key, range_key)}
        parts.update((name, (index.hash, index.range)) for name, index in self.indexes.items())
        self.items: dict[tuple[Any, ...], Item] = Items(parts)
        self.lag: IndexLag | None = None  # None: the indexes are always up to date

    def key(self, item: Item) -> tuple[Any, ...]:
        """The primary key of ``item``."""
        try:
            return (item[self.hash_key],) if self.range_key is None else (item[self.hash_key], item[self.range_key])
        except KeyError:
            raise StorageError(f"ValidationException: {self.name}: an item lacks a key attribute") from None

    def key_item(self, key: tuple[Any, ...]) -> Item:
        """The key attributes of ``key`` as an item."""
        names = (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)
        return dict(zip(names, key, strict=True))

    def key_names(self, index: str | None = None) -> tuple[str, ...]:
        """The attributes of a page cursor of the table (or of one of its indexes)."""
        names = (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)
        if index is not None:
            names = (self.indexes[index].hash, self.indexes[index].range, *names)
        return tuple(dict.fromkeys(names))

    # -- single-item requests ---------------------------------------------------------------------
    def get(self, *key: Any) -> Item | None:
        """GetItem: a copy of the item, or None."""
        item = self.items.get(tuple(key))
        return None if item is None else clean(item)

    def put(self, item: Item, cond: Condition | None = None) -> None:
        """PutItem (replacing any item with its key) if ``cond`` holds."""
        transact([Put(self, item, cond)])

    def update(self, key: tuple[Any, ...], change: Change, cond: Condition | None = None) -> Item:
        """UpdateItem (creating the item if absent) if ``cond`` holds; return the item after it."""
        after = transact([Update(self, key, change, cond)])[0]
        assert after is not None
        return after

    def delete(self, key: tuple[Any, ...], cond: Condition | None = None) -> None:
        """DeleteItem if ``cond`` holds (deleting a missing item is fine)."""
        transact([Delete(self, key, cond)])

    def expire(self, key: tuple[Any, ...]) -> Item | None:
        """What TTL does to an expired item (no request, no condition); the item it removed."""
        gone = self.items.pop(tuple(key), None)
        if gone is not None and self.lag is not None:
            self.lag.wrote(tuple(key), gone, None)
        return gone

    # -- Query --------------------------------------------------------------------------------------
    def _partition(self, index: str | None, hash_value: Any, hk: str, rk: str | None) -> list[Item]:
        """The items of one partition of the table or of an index (as the lagging index shows them)."""
        items = self.items
        lagging = index is not None and self.lag is not None
        if not isinstance(items, Items) or hash_value is None or not hashable(hash_value):
            source = self.lag.view(items) if lagging and self.lag is not None else items
            return [i for i in source.values() if i.get(hk) == hash_value and (rk is None or rk in i)]
        keys = items.partition(index, hash_value)
        if not lagging or self.lag is None:
            return [items[key] for key in keys]
        shown = self.lag.shown(items, keys, hk, hash_value)
        return [i for i in shown if i.get(hk) == hash_value and (rk is None or rk in i)]

    def query(self, hash_value: Any, *, index: str | None = None, where: Callable[[Any], bool] | None = None,
              forward: bool = True, filter: Condition | None = None,
              page: PageAt = FIRST_PAGE) -> tuple[list[Item], Item | None]:
        """One Query page: ``(items, last_evaluated_key)``.

        ``where`` is the sort-key condition; ``page.limit`` counts items evaluated before
        ``filter``. As in DynamoDB, a page that stops at the limit (or at 1 MB)
        returns its last key even if nothing follows.
        """
        limit, start = page.limit, page.start
        if limit is not None and limit < 1:
            raise StorageError("ValidationException: Limit must be at least 1")
        hk, rk = (self.hash_key, self.range_key) if index is None else (
            self.indexes[index].hash, self.indexes[index].range)

        def order(item: Item) -> tuple[Any, ...]:
            return (item[rk], self.key(item)) if rk is not None else self.key(item)

        rows = self._partition(index, hash_value, hk, rk)
        if not rows and start is None:
            return [], None  # an empty partition: an empty page, nothing to resume after
        rows.sort(key=order, reverse=not forward)
        if where is not None and rk is not None:
            rows = [i for i in rows if where(i[rk])]
        if start is not None:
            if start.get(hk) != hash_value or set(start) != set(self.key_names(index)):
                raise StorageError("ValidationException: The provided starting key is invalid")
            if rk is not None and where is not None and not where(start[rk]):
                raise StorageError("ValidationException: The provided starting key does not match the range key "
                                   "predicate")
            mark = order(start)
            rows = [i for i in rows if (order(i) > mark if forward else order(i) < mark)]
        found: list[Item] = []
        size = 0
        for evaluated, item in enumerate(rows, 1):
            if filter is None or filter(item):
                found.append(clean(item))
            size += item_size(item)
            if (limit is not None and evaluated >= limit) or size >= PAGE_BYTES:
                return found, {k: item[k] for k in self.key_names(index)}
        return found, None


@dataclass
class Put:
    """One put of a transaction."""

    table: Table
    item: Item
    cond: Condition | None = None


@dataclass
class Update:
    """One update of a transaction."""

    table: Table
    key: tuple[Any, ...]
    change: Change
    cond: Condition | None = None


@dataclass
class Delete:
    """One delete of a transaction."""

    table: Table
    key: tuple[Any, ...]
    cond: Condition | None = None


@dataclass
class Check:
    """A condition on an item that a transaction checks without writing it."""

    table: Table
    key: tuple[Any, ...]
    cond: Condition


Write = Union[Put, Update, Delete, Check]


def transact(ops: list[Write]) -> list[Item | None]:
    """Apply writes all-or-nothing; return each item after its write (None: deleted).

    Raises:
        ConditionFailed: a condition did not hold (nothing changed).
        StorageError: the request is invalid (an item over 400 KB, one item twice, ...).
    """
    staged: list[tuple[Table, tuple[Any, ...], Item | None]] = []
    reasons: list[str | None] = []
    for op in ops:
        key = op.table.key(op.item) if isinstance(op, Put) else tuple(op.key)
        if any(t is op.table and k == key for t, k, _ in staged):
            raise StorageError("ValidationException: Transaction request cannot include multiple operations "
                               "on one item")
        current = op.table.items.get(key)
        after: Item | None = None
        if isinstance(op, Put):
            after = clean(op.item)
            _check_size(op.table, after)
        reasons.append(None if op.cond is None or op.cond(current if current is not None else {}) else
                       CONDITION_FAILED)
        if isinstance(op, Check) or reasons[-1] is not None:
            staged.append((op.table, key, current))
            continue
        if isinstance(op, Update):
            draft = clean(current) if current is not None else op.table.key_item(key)
            op.change(draft)
            after = clean(draft)
            if op.table.key(after) != key:
                raise StorageError("ValidationException: an update cannot change a key attribute")
            _check_size(op.table, after)
        staged.append((op.table, key, after))
    if any(reasons):
        raise ConditionFailed(reasons)
    for table, key, after in staged:
        if table.lag is not None and after is not table.items.get(key):
            table.lag.wrote(key, table.items.get(key), after)
        if after is None:
            table.items.pop(key, None)
        else:
            table.items[key] = after
    return [None if after is None else clean(after) for _, _, after in staged]


class Transactions:
    """TransactWriteItems with client request tokens: a transaction sent again (an SDK
    retry after a lost response) succeeds without applying twice."""

    def __init__(self) -> None:
        self.applied: OrderedDict[str, list[Item | None]] = OrderedDict()

    def write(self, ops: list[Write], token: str) -> list[Item | None]:
        """Apply ``ops`` as one transaction, unless ``token`` already applied one."""
        if token not in self.applied:
            self.applied[token] = transact(ops)
            while len(self.applied) > TOKENS_KEPT:
                self.applied.popitem(last=False)
        return [None if i is None else clean(i) for i in self.applied[token]]


def _check_size(table: Table, item: Item) -> None:
    if item_size(item) > DYNAMODB_ITEM_LIMIT:
        raise StorageError(f"ValidationException: {table.name}: Item size has exceeded the maximum allowed size")


