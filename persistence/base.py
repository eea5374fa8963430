"""Shared plumbing of the store: models, clock, error mapping, conditional writes."""

from __future__ import annotations

import contextlib
import json
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator, TypeVar, cast

from pynamodb.attributes import MapAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from workflows.core.model.records import LIVE
from workflows.core.storage.aws_actions import PLAN_OPS, aws_actions
from workflows.core.storage.retention import retain_until
from workflows.core.storage.rules import (  # noqa: F401 - the store's modules import these from here
    SCHEDULE_SHARDS,
    check_item_size,
    lease_expiry,
    new_request,
    read_fairly,
    shard_of,
)
from workflows.core.storage.writes.base import WritesBase
from workflows.errors import StorageError, Throttled
from workflows.settings import Settings

from . import metering
from .models import Models, build_models

THROTTLE_CODES = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
})
CONDITION_FAILED = "ConditionalCheckFailedException"
TX_CONDITION_FAILED = frozenset({"ConditionalCheckFailed", CONDITION_FAILED})
TX_CONFLICT = "TransactionConflict"
#: The statuses of a live run, for conditions (sorted: a stable request).
LIVE_STATUSES = sorted(LIVE)

T = TypeVar("T")


def cause_code(exc: BaseException) -> str | None:
    """Return the AWS error code behind a PynamoDB error, if any."""
    return getattr(exc, "cause_response_code", None)


def is_condition_failure(exc: BaseException) -> bool:
    """Whether a write failed only because its condition did not hold."""
    if isinstance(exc, TransactWriteError):
        reasons = getattr(exc, "cancellation_reasons", None) or []
        return any(r is not None and r.code in TX_CONDITION_FAILED for r in reasons)
    return cause_code(exc) == CONDITION_FAILED


def is_conflict(exc: BaseException) -> bool:
    """Whether a transaction lost a race with another one on the same items (retry it)."""
    reasons = getattr(exc, "cancellation_reasons", None) or [] if isinstance(exc, TransactWriteError) else []
    return any(r is not None and r.code == TX_CONFLICT for r in reasons) and not is_condition_failure(exc)


class StoreBase(WritesBase):
    """Holds the models and the helpers every part of the store uses."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.m: Models = build_models(settings)
        self.clock = clock
        self._connection: Connection | None = None
        metering.install()

    def now(self) -> float:
        """Return the store's clock, in epoch seconds."""
        return self.clock()

    def retention_of(self, ended_at: float) -> datetime | None:
        """The TTL of the items of a run that ended at ``ended_at`` (None: retention is off)."""
        until = retain_until(ended_at, self.settings)
        return None if until is None else datetime.fromtimestamp(until, tz=timezone.utc)

    @property
    def shards(self) -> int:
        """The shard count of every write-sharded index key (``WORKFLOWS_INDEX_SHARDS``)."""
        return self.settings.index_shards

    @property
    def connection(self) -> Connection:
        """The explicit connection that transactions need."""
        if self._connection is None:
            self._connection = Connection(region=self.settings.region, host=self.settings.dynamodb_endpoint)
        return self._connection

    @aws_actions(elsewhere=PLAN_OPS)
    def transaction(self, token: str | None = None) -> TransactWrite:
        """Return a write transaction on this store's connection (``token``: its client request token)."""
        return TransactWrite(connection=self.connection, client_request_token=token)

    def transact_reasons(self, action: str, build: Callable[[TransactWrite], None],
                         attempts: int = 6, *, token: str | None = None) -> list[str | None] | None:
        """Run a transaction (retrying conflicts); None if it applied, else the per-item
        cancellation codes (in the order the items were added) of the failed conditions."""
        for attempt in range(attempts):
            try:
                with self.errors(action), self.transaction(token) as tx:
                    added = AddedOrder(tx)
                    build(cast(TransactWrite, added))
                return None
            except PynamoDBException as exc:
                if is_condition_failure(exc):
                    return added.of(self.failure_reasons(exc))
                if not is_conflict(exc) or attempt == attempts - 1:
                    raise
                time.sleep(0.01 * 2 ** attempt)
        raise StorageError(f"{action}: transaction kept conflicting")

    @contextlib.contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Map PynamoDB failures to typed errors (condition failures and conflicts pass through)."""
        try:
            yield
        except PynamoDBException as exc:
            if isinstance(exc, DoesNotExist) or is_condition_failure(exc) or is_conflict(exc):
                raise
            code = cause_code(exc)
            if code in THROTTLE_CODES:
                raise Throttled(f"{action}: DynamoDB kept throttling ({code})") from exc
            raise StorageError(f"{action} failed: {code or exc}") from exc

    def read_shards(self, action: str, shards: int, limit: int, query: Callable[[str], Iterable[T]]) -> list[T]:
        """Read up to ``limit`` items of a sharded index fairly (see ``read_fairly``)."""
        with self.errors(action):
            return read_fairly(shards, limit, query)

    def conditional(self, action: str, write: Callable[[], Any], *,
                    own: Callable[[], bool] | None = None) -> bool:
        """Run a conditional write; return False when its condition did not hold.

        ``own``: asked after a failed condition whether the item shows this very
        request applied (a lost response retried by the SDK): then the write counts
        as done.
        """
        try:
            with self.errors(action):
                write()
            return True
        except PynamoDBException as exc:
            if is_condition_failure(exc):
                return own is not None and own()
            raise

    def failure_reasons(self, exc: BaseException) -> list[str | None]:
        """The per-item cancellation codes of a failed transaction (None: that item was fine)."""
        reasons = getattr(exc, "cancellation_reasons", None) or []
        return [None if r is None or r.code in (None, "None") else r.code for r in reasons]


class AddedOrder:
    """A transaction that notes the order its items are added in. PynamoDB sends them
    grouped by kind (condition checks, deletes, puts, updates) and DynamoDB's cancellation
    reasons follow the request: :meth:`of` puts them back in the order they were added."""

    SENT_FIRST = ("condition_check", "delete", "save", "update")

    def __init__(self, tx: TransactWrite) -> None:
        self.tx = tx
        self.kinds: list[str] = []

    def _add(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.kinds.append(kind)
        getattr(self.tx, kind)(*args, **kwargs)

    def condition_check(self, *args: Any, **kwargs: Any) -> None:
        self._add("condition_check", args, kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        self._add("delete", args, kwargs)

    def save(self, *args: Any, **kwargs: Any) -> None:
        self._add("save", args, kwargs)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._add("update", args, kwargs)

    def of(self, reasons: list[str | None]) -> list[str | None]:
        """``reasons`` (in the order sent) in the order the items were added."""
        sent = sorted(range(len(self.kinds)), key=lambda i: self.SENT_FIRST.index(self.kinds[i]))
        added: list[str | None] = [None] * len(self.kinds)
        for position, index in enumerate(sent):
            added[index] = reasons[position] if position < len(reasons) else None
        return added


def to_json(value: Any) -> str:
    """Compact JSON for the store's own small structured fields."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def plain(item: Any) -> dict[str, Any]:
    """A model instance as a plain item, keyed by the stored attribute names (a TTL as epoch seconds)."""
    values = {}
    for name, attribute in item.get_attributes().items():
        value = getattr(item, name)
        if isinstance(value, datetime):
            value = value.timestamp()
        elif isinstance(value, MapAttribute):
            value = value.as_dict()
        if value is not None and not (isinstance(value, set) and not value):
            values[attribute.attr_name] = value
    return values
