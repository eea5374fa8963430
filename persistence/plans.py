"""The DynamoDB interpreter of write plans: one op is one PynamoDB request, several are one
``TransactWrite``; conditions and actions are built from the models' attributes (see
``workflows.core.storage.plans``)."""

from __future__ import annotations

import enum
import functools
from datetime import datetime, timezone
from typing import Any

from pynamodb.attributes import TTLAttribute
from pynamodb.exceptions import DoesNotExist, PynamoDBException

from workflows.core.storage import plans as p
from workflows.core.storage.aws_actions import PLAN_OPS, aws_actions

from .base import AddedOrder, StoreBase, is_condition_failure, plain

#: The model of each logical table name.
MODELS = {"runs": "Run", "history": "Event", "hooks": "Hook", "timers": "Timer", "schedules": "Schedule",
          "joins": "Join", "signals": "Signal", "idempotency": "Guard", "tags": "Tag", "flow": "Flow",
          "batches": "Batch"}


class PlanStore(StoreBase):
    """``commit`` and ``read_item`` over DynamoDB."""

    def model_of(self, table: str) -> Any:
        """The model class of a logical table name."""
        return getattr(self.m, MODELS[table])

    @aws_actions("dynamodb:GetItem@{table}")
    def read_item(self, table: str, key: p.Key, name: str | None = None,
                  attrs: tuple[str, ...] | None = None) -> p.Item | None:
        """One consistent GetItem: the item at ``key`` as plain values (only ``attrs``, if given), or None."""
        try:
            with self.errors(name or p.read_name(table)):
                return plain(self.model_of(table).get(*key, consistent_read=True,
                                                      attributes_to_get=None if attrs is None else list(attrs)))
        except DoesNotExist:
            return None

    @aws_actions("dynamodb:Query@{table}")
    def query_items(self, name: str, table: str, hash_value: Any, low: Any = None, high: Any = None) -> list[p.Item]:
        """A consistent Query of one partition (sort key from ``low`` to ``high``, each if given), paged to the end."""
        model = self.model_of(table)
        sort = getattr(model, model._range_keyname)  # by its Python name
        cond = (sort.between(low, high) if low is not None and high is not None else sort >= low if low is not None
                else sort <= high if high is not None else None)
        with self.errors(name):
            return [plain(item) for item in model.query(hash_value, cond, consistent_read=True)]

    @aws_actions("dynamodb:Query@{table}")
    def newest_items(self, name: str, table: str, hash_value: Any, limit: int, below: Any = None) -> list[p.Item]:
        """One consistent Query of one partition, newest sort key first: up to ``limit`` items
        (sort key below ``below``, if given)."""
        sort = getattr(self.model_of(table), self.model_of(table)._range_keyname)
        with self.errors(name):
            return [plain(item) for item in self.model_of(table).query(
                hash_value, None if below is None else sort < below, consistent_read=True,
                scan_index_forward=False, limit=limit)]

    @aws_actions("dynamodb:BatchGetItem@{table}")
    def batch_items(self, name: str, table: str, keys: list[p.Key]) -> dict[p.Key, p.Item]:
        """Consistent BatchGetItem requests: the items that exist among ``keys``, by key."""
        model = self.model_of(table)
        with self.errors(name):
            items = [plain(item) for item in model.batch_get(list(dict.fromkeys(keys)), consistent_read=True)]
        names = [getattr(model, n).attr_name for n in (model._hash_keyname, model._range_keyname) if n]
        return {tuple(item[n] for n in names): item for item in items}

    @aws_actions(elsewhere=PLAN_OPS)
    def commit(self, plan: p.Plan) -> p.Committed:
        """Send ``plan`` as one request; a refusal is ``applied=False`` with the cancellation
        reasons in plan order, unless ``plan.own`` shows an earlier send of it applied."""
        plan = self.expiring(plan)
        if plan.transaction:
            reasons = self.transact_reasons(plan.name, functools.partial(self._build, plan), token=plan.token)
            committed = p.Committed(True, [None] * len(plan.ops)) if reasons is None else p.Committed(False, reasons)
        else:
            committed = self._single(plan)
        own = plan.own
        if not committed.applied and own is not None and p.holds(own.cond, self.read_item(own.table, own.key) or {}):
            return p.Committed(True, [None] * len(plan.ops))
        return committed

    @aws_actions(elsewhere=PLAN_OPS)
    def _single(self, plan: p.Plan) -> p.Committed:
        """One PutItem, UpdateItem or DeleteItem."""
        op = plan.ops[0]
        model = self.model_of(op.table)
        cond = None if op.cond is None else self.condition(model, op.cond)
        try:
            with self.errors(plan.name):
                if isinstance(op, p.Put):
                    self.instance(model, op.item).save(condition=cond)
                elif isinstance(op, p.Delete):
                    model(*op.key).delete(condition=cond)
                else:
                    assert isinstance(op, p.Update)
                    item = model(*op.key)
                    item.update(actions=self.actions(model, op.actions), condition=cond)
                    return p.Committed(True, [None], plain(item))
        except PynamoDBException as exc:
            if is_condition_failure(exc):
                return p.Committed(False, [p.CONDITION_FAILED])
            raise
        return p.Committed(True, [None])

    @aws_actions(elsewhere=PLAN_OPS)
    def _build(self, plan: p.Plan, tx: AddedOrder) -> None:
        """Add the plan's ops to a transaction, in order."""
        for op in plan.ops:
            model = self.model_of(op.table)
            cond = None if op.cond is None else self.condition(model, op.cond)
            if isinstance(op, p.Put):
                tx.save(self.instance(model, op.item), condition=cond)
            elif isinstance(op, p.Update):
                tx.update(model(*op.key), actions=self.actions(model, op.actions), condition=cond)
            elif isinstance(op, p.Delete):
                tx.delete(model(*op.key), condition=cond)
            else:
                tx.condition_check(model, *op.key, condition=cond)

    @staticmethod
    def instance(model: Any, item: p.Item) -> Any:
        """A model instance holding ``item``."""
        return model(**{python_name(model, name): _stored(model, name, value) for name, value in item.items()
                        if value is not None})

    def condition(self, model: Any, cond: p.Cond) -> Any:
        """The PynamoDB condition of a condition tree."""
        if isinstance(cond, (p.And, p.Or)):
            parts = [self.condition(model, c) for c in cond.conds]
            return functools.reduce(lambda a, b: (a & b) if isinstance(cond, p.And) else (a | b), parts)
        if isinstance(cond, p.Not):
            return ~self.condition(model, cond.cond)
        assert isinstance(cond, (p.Exists, p.Missing, p.In, p.Compare, p.Contains))
        attr = attribute(model, cond.attr)
        if isinstance(cond, p.Exists):
            return attr.exists()
        if isinstance(cond, p.Missing):
            return attr.does_not_exist()
        if isinstance(cond, p.Contains):
            return attr.contains(cond.value)
        if isinstance(cond, p.In):
            return attr.is_in(*(_stored(model, cond.attr, v) for v in cond.values))
        value = _stored(model, cond.attr, cond.value)
        return {"=": attr.__eq__, "<>": attr.__ne__, "<": attr.__lt__, "<=": attr.__le__, ">": attr.__gt__,
                ">=": attr.__ge__}[cond.op](value)

    @staticmethod
    def actions(model: Any, actions: tuple[p.Action, ...]) -> list[Any]:
        """The PynamoDB update actions of plan actions."""
        built = []
        for action in actions:
            attr = attribute(model, action.attr)
            if isinstance(action, p.Remove) or (isinstance(action, p.Set) and action.value is None):
                built.append(attr.remove())
            elif isinstance(action, p.Set):
                built.append(attr.set(_stored(model, action.attr, action.value)))
            elif isinstance(action, p.SetIfMissing):
                built.append(attr.set(attr | _stored(model, action.attr, action.value)))
            elif isinstance(action, p.Copy):
                built.append(attr.set(attribute(model, action.source)))
            elif isinstance(action, p.SetIn):
                built.append(attr[action.key].set(action.value))
            elif isinstance(action, p.RemoveIn):
                built.append(attr[action.key].remove())
            elif isinstance(action, p.Add):
                built.append(attr.add(set(action.value) if isinstance(action.value, frozenset) else action.value))
            else:
                assert isinstance(action, p.DeleteFrom)
                built.append(attr.delete(set(action.members)))
        return built


@functools.lru_cache(maxsize=256)
def _python_names(model: Any) -> dict[str, str]:
    """The Python name of each attribute of ``model`` by its stored name."""
    return {attr.attr_name: name for name, attr in model.get_attributes().items()}


def python_name(model: Any, stored: str) -> str:
    """The Python name of the attribute stored as ``stored``: plans name attributes as stored,
    and a model may spell one otherwise (``attr_name=``, e.g. a join's ``entry`` stored as ``slot``)."""
    return _python_names(model).get(stored, stored)


def attribute(model: Any, stored: str) -> Any:
    """The model's attribute stored as ``stored``."""
    return getattr(model, python_name(model, stored))


def _stored(model: Any, name: str, value: Any) -> Any:
    """A plain value as its attribute (stored as ``name``) takes it (a TTL is a datetime; a set stays a set;
    a state is its word)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(attribute(model, name), TTLAttribute) and isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    return set(value) if isinstance(value, frozenset) else value
