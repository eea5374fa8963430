"""Write plans: each store write stated once, as data, in DynamoDB's own model.

A plan is what one request writes: one op (``Put``, ``Update``, ``Delete`` on a key, each with
an optional condition) is one request; several ops (``Check`` among them) are one transaction,
all-or-nothing. Conditions and update actions are small trees of plain values. Tables are named
logically (``runs``, ``history``, ...); each store maps the names to its tables and interprets the
same plan: ``persistence`` as one PynamoDB request or ``TransactWrite``, ``workflows.memory`` over
its emulated tables. The rules of a valid request (an item's 400 KB, a transaction's 100 items and
one op per item) are checked here, once, when a plan is made.

A plan carries a request id (``token``): the transaction's client request token, and the value a
write stores (``req``) so that a retry of an applied request whose response was lost (the retry
fails its condition) is recognised as the same request (DESIGN.md invariant 11): ``own`` is a
condition on one item that, read after a refusal, shows the write applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from ...errors import StorageError
from ...settings import DYNAMODB_ITEM_LIMIT
from .aws_actions import aws_actions

Item = dict[str, Any]
Key = tuple[Any, ...]
#: Ops a DynamoDB transaction may hold.
TRANSACTION_OPS = 100
#: The longest error text a store keeps (the rest is cut).
ERROR_CHARS = 4000
#: DynamoDB's cancellation reason of an op whose condition did not hold.
CONDITION_FAILED = "ConditionalCheckFailed"


# -- conditions -----------------------------------------------------------------------------------------
class Cond:
    """A condition expression; combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Cond) -> Cond:
        return And((self, other))

    def __or__(self, other: Cond) -> Cond:
        return Or((self, other))

    def __invert__(self) -> Cond:
        return Not(self)


@dataclass(frozen=True, eq=False)
class Exists(Cond):
    """attribute_exists(``attr``)."""

    attr: str


@dataclass(frozen=True, eq=False)
class Missing(Cond):
    """attribute_not_exists(``attr``)."""

    attr: str


@dataclass(frozen=True, eq=False)
class Compare(Cond):
    """``attr op value``, ``op`` one of ``= <> < <= > >=``."""

    attr: str
    op: str
    value: Any


@dataclass(frozen=True, eq=False)
class In(Cond):
    """``attr IN (values)``."""

    attr: str
    values: tuple[Any, ...]


@dataclass(frozen=True, eq=False)
class Contains(Cond):
    """contains(``attr``, ``value``): a set holds the member, or a string the substring."""

    attr: str
    value: Any


@dataclass(frozen=True, eq=False)
class And(Cond):
    """Every condition holds."""

    conds: tuple[Cond, ...]


@dataclass(frozen=True, eq=False)
class Or(Cond):
    """Some condition holds."""

    conds: tuple[Cond, ...]


@dataclass(frozen=True, eq=False)
class Not(Cond):
    """The condition does not hold."""

    cond: Cond


class A:
    """An attribute, to write conditions as ``A("cursor") < 3`` or ``A("status").is_in(...)``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, value: Any) -> Compare:  # type: ignore[override]
        return Compare(self.name, "=", value)

    def __ne__(self, value: Any) -> Compare:  # type: ignore[override]
        return Compare(self.name, "<>", value)

    def __lt__(self, value: Any) -> Compare:
        return Compare(self.name, "<", value)

    def __le__(self, value: Any) -> Compare:
        return Compare(self.name, "<=", value)

    def __gt__(self, value: Any) -> Compare:
        return Compare(self.name, ">", value)

    def __ge__(self, value: Any) -> Compare:
        return Compare(self.name, ">=", value)

    __hash__ = None  # type: ignore[assignment]

    def exists(self) -> Exists:
        """attribute_exists."""
        return Exists(self.name)

    def missing(self) -> Missing:
        """attribute_not_exists."""
        return Missing(self.name)

    def is_in(self, *values: Any) -> In:
        """``IN`` the values."""
        return In(self.name, tuple(values))

    def contains(self, value: Any) -> Contains:
        """contains(attribute, value)."""
        return Contains(self.name, value)


_COMPARE = {"=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def holds(cond: Cond | None, item: Item) -> bool:
    """Whether ``cond`` holds on ``item`` ({} for no item), as DynamoDB evaluates it: a
    comparison with a missing attribute, or of values of different types, is false (but ``<>``
    holds)."""
    if cond is None:
        return True
    if isinstance(cond, Exists):
        return cond.attr in item
    if isinstance(cond, Missing):
        return cond.attr not in item
    if isinstance(cond, Compare):
        if cond.attr not in item:
            return cond.op == "<>"
        value = item[cond.attr]
        if _kind(value) != _kind(cond.value):
            return cond.op == "<>"
        return bool(_COMPARE[cond.op](value, cond.value))
    if isinstance(cond, In):
        return cond.attr in item and any(_kind(v) == _kind(item[cond.attr]) and v == item[cond.attr]
                                         for v in cond.values)
    if isinstance(cond, Contains):
        value = item.get(cond.attr)
        return isinstance(value, (set, frozenset, str)) and cond.value in value
    if isinstance(cond, And):
        return all(holds(c, item) for c in cond.conds)
    if isinstance(cond, Or):
        return any(holds(c, item) for c in cond.conds)
    if isinstance(cond, Not):
        return not holds(cond.cond, item)
    raise TypeError(f"not a condition: {cond!r}")


def _kind(value: Any) -> str:
    """DynamoDB's type of a value: a bool is not a number."""
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, str):  # a state (``core.model.states``) is its word
        return "S"
    return "N" if isinstance(value, (int, float)) else type(value).__name__


# -- update actions -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Set:
    """SET ``attr`` = ``value`` (None removes it: a null attribute is not stored)."""

    attr: str
    value: Any


@dataclass(frozen=True)
class SetIfMissing:
    """SET ``attr`` = if_not_exists(``attr``, ``value``)."""

    attr: str
    value: Any


@dataclass(frozen=True)
class Add:
    """ADD ``value`` to a number, or its members to a number set (a missing attribute starts empty)."""

    attr: str
    value: int | float | frozenset[Any]


@dataclass(frozen=True)
class Remove:
    """REMOVE ``attr``."""

    attr: str


@dataclass(frozen=True)
class DeleteFrom:
    """DELETE ``members`` from a set (the attribute goes when the set is empty)."""

    attr: str
    members: frozenset[Any]


@dataclass(frozen=True)
class Copy:
    """SET ``attr`` = ``source`` (the condition must ensure ``source`` exists)."""

    attr: str
    source: str


@dataclass(frozen=True)
class SetIn:
    """SET ``attr.key`` = ``value`` in a map attribute (the map must exist)."""

    attr: str
    key: str
    value: Any


@dataclass(frozen=True)
class RemoveIn:
    """REMOVE ``attr.key`` from a map attribute (the map must exist)."""

    attr: str
    key: str


Action = Union[Set, SetIfMissing, Add, Remove, DeleteFrom, Copy, SetIn, RemoveIn]


def path(action: Action) -> str:
    """The document path an action changes (one update acts on a path once)."""
    return f"{action.attr}.{action.key}" if isinstance(action, (SetIn, RemoveIn)) else action.attr


def _map(item: Item, name: str) -> dict[str, Any]:
    value = item.get(name)
    if not isinstance(value, dict):
        raise StorageError("ValidationException: The document path provided in the update expression is "
                           "invalid for update")
    return value


def apply_actions(actions: tuple[Action, ...], item: Item) -> None:
    """Apply update actions to ``item`` in place, in order."""
    for action in actions:
        if isinstance(action, Set):
            if action.value is None:
                item.pop(action.attr, None)
            else:
                item[action.attr] = action.value
        elif isinstance(action, SetIfMissing):
            item.setdefault(action.attr, action.value)
        elif isinstance(action, Add):
            if isinstance(action.value, frozenset):
                item[action.attr] = set(item.get(action.attr) or ()) | action.value
            else:
                item[action.attr] = item.get(action.attr, 0) + action.value
        elif isinstance(action, Remove):
            item.pop(action.attr, None)
        elif isinstance(action, DeleteFrom):
            item[action.attr] = set(item.get(action.attr) or ()) - action.members
        elif isinstance(action, Copy):
            item[action.attr] = item[action.source]
        elif isinstance(action, SetIn):
            _map(item, action.attr)[action.key] = action.value
        elif isinstance(action, RemoveIn):
            _map(item, action.attr).pop(action.key, None)
        else:
            raise TypeError(f"not an update action: {action!r}")


# -- ops and plans -----------------------------------------------------------------------------------------
@aws_actions("dynamodb:PutItem@{table}")
@dataclass(frozen=True)
class Put:
    """PutItem: ``item`` replaces any item with its key if ``cond`` holds."""

    table: str
    item: Item
    cond: Cond | None = None


@aws_actions("dynamodb:UpdateItem@{table}")
@dataclass(frozen=True)
class Update:
    """UpdateItem (creating the item if absent) if ``cond`` holds."""

    table: str
    key: Key
    actions: tuple[Action, ...]
    cond: Cond | None = None


@aws_actions("dynamodb:DeleteItem@{table}")
@dataclass(frozen=True)
class Delete:
    """DeleteItem if ``cond`` holds (deleting a missing item is fine)."""

    table: str
    key: Key
    cond: Cond | None = None


# A plan's ``own`` check is no request of the plan: the store reads that item (GetItem) after a refusal.
@aws_actions("dynamodb:ConditionCheckItem@{table}")
@dataclass(frozen=True)
class Check:
    """ConditionCheck: a condition on an item, which a transaction checks without writing it."""

    table: str
    key: Key
    cond: Cond


Op = Union[Put, Update, Delete, Check]


@dataclass(frozen=True)
class Plan:
    """One write request: one op alone, or a transaction of several.

    Attributes:
        name: what the request does (``advance run``), for errors and fault injection.
        ops: the ops, in order (cancellation reasons come back in this order).
        token: the request id (the transaction's client request token; what the write stores
            as ``req`` where a retry must be recognised).
        own: read after a refusal: a check this request applied (its response was lost).
    """

    name: str
    ops: tuple[Op, ...]
    token: str | None = None
    own: Check | None = None

    @property
    def transaction(self) -> bool:
        """Whether the plan is a transaction (several ops, or a lone condition check)."""
        return len(self.ops) > 1 or isinstance(self.ops[0], Check)


@dataclass
class Committed:
    """What a committed plan did.

    Attributes:
        applied: the plan applied (or an earlier send of it did: ``own`` held).
        reasons: per op, in plan order, the cancellation reason (None: that op was fine).
        item: a lone ``Update`` that applied now: the item after it; else None.
    """

    applied: bool
    reasons: list[str | None] = field(default_factory=list)
    item: Item | None = None

    def __bool__(self) -> bool:
        return self.applied


def plan(name: str, *ops: Op, token: str | None = None, own: Check | None = None) -> Plan:
    """A valid plan (see :func:`check_plan`)."""
    made = Plan(name, tuple(ops), token, own)
    check_plan(made)
    return made


def check_plan(made: Plan) -> None:
    """Refuse a plan DynamoDB would refuse, before any request.

    Raises:
        StorageError: a put item over 400 KB (names its largest attribute), no op, over 100 ops,
            two ops on one item, or two actions on one attribute.
    """
    if not made.ops or len(made.ops) > TRANSACTION_OPS:
        raise StorageError(f"{made.name}: a request holds 1 to {TRANSACTION_OPS} ops, not {len(made.ops)}")
    keys: set[tuple[str, Key]] = set()
    for op in made.ops:
        if isinstance(op, Put):
            check_size(op.item)
            continue
        if isinstance(op, Update) and len({path(a) for a in op.actions}) < len(op.actions):
            raise StorageError(f"{made.name}: an update cannot act on one attribute twice ({op.table} {op.key})")
        if (op.table, op.key) in keys:
            raise StorageError(f"{made.name}: a transaction cannot touch one item twice ({op.table} {op.key})")
        keys.add((op.table, op.key))


def check_size(item: Item) -> None:
    """Refuse an item over DynamoDB's 400 KB as the table would (StorageError: an item of the
    store's own making, so the caller retries later; see DESIGN.md invariant 12)."""
    size = item_size(item)
    if size > DYNAMODB_ITEM_LIMIT:
        largest = max(item, key=lambda name: value_size(item[name]))
        raise StorageError(f"ValidationException: Item size has exceeded the maximum allowed size ({size} bytes, "
                           f"over {DYNAMODB_ITEM_LIMIT}; largest attribute {largest!r})")


def cut_error(error: str | None) -> str | None:
    """An error text as stored: at most :data:`ERROR_CHARS` characters."""
    return None if error is None else error[:ERROR_CHARS]


def value_size(value: Any) -> int:
    """The size DynamoDB counts for one attribute value (approximately, as documented)."""
    if type(value) is str:  # the common case first (its UTF-8 length: its length if it is ASCII)
        return len(value) if value.isascii() else len(value.encode())
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, (int, float)):
        digits = repr(abs(value)).split("e")[0].replace(".", "").strip("0")
        return (len(digits) + 1) // 2 + 1
    if isinstance(value, (set, frozenset)):
        return sum(value_size(v) for v in value)
    if isinstance(value, dict):
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 3 + sum(value_size(v) + 1 for v in value)
    raise TypeError(f"not a DynamoDB value: {type(value).__name__}")


def item_size(item: Item) -> int:
    """The size of an item: each attribute's name plus its value."""
    size = 0
    for name, value in item.items():
        if value is not None:
            size += len(name.encode()) + value_size(value)
    return size


#: The name of a consistent read of one item of a table (a request name, as the stores use it).
READ_NAMES = {"runs": "read run", "history": "read event", "hooks": "read hook", "timers": "read timer",
              "schedules": "read schedule", "idempotency": "read idempotency key", "flow": "read flow"}


def read_name(table: str) -> str:
    """The request name of a consistent read of one item of ``table``."""
    return READ_NAMES.get(table, f"read {table}")
