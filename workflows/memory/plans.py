"""The in-memory interpreter of write plans: a plan evaluated over the emulated tables, as
DynamoDB would apply it (see ``workflows.core.storage.plans``)."""

from __future__ import annotations

import functools
from typing import Any, cast

from ..core.storage import plans as p
from .base import MemoryBase
from .tables import Check as CheckOp
from .tables import ConditionFailed, Item, PageAt, Table, Write, transact
from .tables import Delete as DeleteOp
from .tables import Put as PutOp
from .tables import Update as UpdateOp


class PlanTables(MemoryBase):
    """``commit`` and ``read_item``: the two requests write plans need, over this store's tables."""

    def table(self, name: str) -> Table:
        """The table of a logical name (``runs``, ``history``, ...)."""
        attributes = vars(self)
        known = attributes.setdefault("_table_attributes", {})  # name -> (the attribute holding it, the table)
        found = known.get(name)
        if found is not None and attributes.get(found[0]) is found[1]:
            return cast(Table, found[1])
        for attribute, value in attributes.items():
            if isinstance(value, Table) and value.name == name:
                known[name] = (attribute, value)
                return value
        raise KeyError(f"no table {name!r}")

    def read_item(self, table: str, key: p.Key, name: str | None = None,
                  attrs: tuple[str, ...] | None = None) -> Item | None:
        """One consistent GetItem: the item at ``key`` (only ``attrs``, if given), or None."""
        item = self._request(name or p.read_name(table), functools.partial(self.table(table).get, *key))
        return item if item is None or attrs is None else {k: v for k, v in item.items() if k in attrs}

    def query_items(self, name: str, table: str, hash_value: Any, low: Any = None, high: Any = None) -> list[Item]:
        """A Query of one partition (sort key from ``low`` to ``high``, each if given), paged to the end."""
        def where(sort: Any) -> bool:
            return (low is None or sort >= low) and (high is None or sort <= high)

        return list(self._pages(name, self.table(table), hash_value, where=where))

    def newest_items(self, name: str, table: str, hash_value: Any, limit: int, below: Any = None) -> list[Item]:
        """One Query of one partition, newest sort key first: up to ``limit`` items (sort key below
        ``below``, if given)."""
        def where(sort: Any) -> bool:
            return below is None or sort < below

        page, _ = self._request(name, functools.partial(self.table(table).query, hash_value, where=where,
                                                       forward=False, page=PageAt(limit)))
        return page

    def batch_items(self, name: str, table: str, keys: list[p.Key]) -> dict[p.Key, Item]:
        """BatchGetItem requests: the items that exist among ``keys``, by key."""
        return self._batch_get(name, self.table(table), keys)

    def commit(self, plan: p.Plan) -> p.Committed:
        """Apply ``plan`` as one request (all-or-nothing); a refusal is ``applied=False`` with the
        cancellation reasons, unless ``plan.own`` shows an earlier send of it applied."""
        plan = self.expiring(plan)
        ops = [self._op(op) for op in plan.ops]
        if plan.transaction:
            token = plan.token or f"tx-{next(self._tokens)}"
            apply: Any = functools.partial(self._transactions.write, ops, token)
        else:  # one request on one item: its result is the item after it (as UpdateItem's ALL_NEW)
            apply = functools.partial(_lone, ops[0])
        try:
            result = self._request(plan.name, apply)
        except ConditionFailed as refused:
            own = plan.own
            if own is not None and p.holds(own.cond, self.read_item(own.table, own.key) or {}):
                return p.Committed(True, [None] * len(ops))
            return p.Committed(False, refused.reasons)
        lone = not plan.transaction and isinstance(plan.ops[0], p.Update)
        return p.Committed(True, [None] * len(ops), result if lone else None)

    def _op(self, op: p.Op) -> Write:
        """The table op of a plan op."""
        table = self.table(op.table)
        cond = None if op.cond is None else functools.partial(p.holds, op.cond)
        if isinstance(op, p.Put):
            return PutOp(table, op.item, cond)
        if isinstance(op, p.Update):
            return UpdateOp(table, op.key, functools.partial(p.apply_actions, op.actions), cond)
        if isinstance(op, p.Delete):
            return DeleteOp(table, op.key, cond)
        return CheckOp(table, op.key, functools.partial(p.holds, op.cond))


def _lone(op: Write) -> Item | None:
    """One single-item request: the item after it (None: deleted)."""
    return transact([op])[0]
