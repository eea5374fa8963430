"""Rules every Store keeps the same way, whatever holds the data: item sizes, shard labels,
lease rounding, where a large result goes, and fair reads of sharded indexes."""

from __future__ import annotations

import itertools
import math
import uuid
import zlib
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, TypeVar

from ...errors import ItemTooLarge, PayloadTooLarge
from ...settings import DYNAMODB_ITEM_LIMIT, Settings
from ..model.control import OutcomeRecorded

if TYPE_CHECKING:
    from .ports import Store

T = TypeVar("T")

#: Room in a run item for everything but its arguments and result (ids, times, waiting, error).
RUN_ITEM_RESERVE = 24 * 1024
#: The schedules' due index keeps its own count; every other write-sharded index key has
#: ``Settings.index_shards`` shards (``WORKFLOWS_INDEX_SHARDS``): leases, due timers,
#: retention, and the status and workflow listings.
SCHEDULE_SHARDS = 4


def check_item_size(fields: dict[str, str | None], limit: int = DYNAMODB_ITEM_LIMIT - 8 * 1024) -> None:
    """Raise ItemTooLarge, naming the largest field, before a request that would fail."""
    sizes = {name: len(value.encode()) for name, value in fields.items() if value}
    total = sum(sizes.values())
    if total > limit:
        largest = max(sizes, key=lambda k: sizes[k])
        raise ItemTooLarge(largest, total, limit)


def shard_of(key: str, shards: int) -> str:
    """A stable shard label for ``key`` (spreads hot index partitions)."""
    return str(zlib.crc32(key.encode()) % shards)


def new_request() -> str:
    """A fresh request id, stored with a conditional write so that a retry of the same
    request (its first response lost, the SDK sending it again) is recognised as ours:
    the retry fails its condition, and the item already carries this id."""
    return uuid.uuid4().hex


def signal_time(now: float, last: int | float | None) -> int:
    """The number a new signal's key is ordered by (``name#number#nonce``): the sender's time in
    nanoseconds, or just after the last signal stored under the chain's anchor (its
    ``signal_clock``) if the sender's clock is behind that.

    Senders' clocks differ (a client restarted on another host, a clock stepped back), so a
    key of the sender's time alone could order a signal before one stored earlier; storing a
    signal is conditional on ``signal_clock <= number`` and sets it to the number, so a signal
    sent after another one was stored is always ordered after it."""
    return max(int(now * 1e9), int(last or 0) + 1)


def lease_expiry(now: float, settings: Settings, seconds: float | None = None) -> float:
    """A lease expiry ``seconds`` (the lease by default) from ``now``, rounded up to a fifth of
    the lease, so the sparse lease index is written rarely."""
    seconds = settings.lease_seconds if seconds is None else seconds
    bucket = max(1.0, settings.lease_seconds / 5)
    return math.ceil((now + seconds) / bucket) * bucket


#: Room for a payload's reference to the blob store (``core/storage/payloads.py``), whatever the threshold.
REFERENCE_ROOM = 512


def inline_payload_limit(settings: Settings) -> int:
    """The largest payload text a store accepts inline: a payload up to ``inline_payload_bytes``,
    or the reference that stands for a larger one."""
    return max(settings.inline_payload_bytes, REFERENCE_ROOM)


def check_inline_args(settings: Settings, run_id: str, args: str) -> None:
    """Refuse arguments over :func:`inline_payload_limit` (``PayloadTooLarge``), as ``create_run`` does."""
    size = len(args.encode())
    if size > inline_payload_limit(settings):
        raise PayloadTooLarge(f"arguments of run {run_id}", size, inline_payload_limit(settings))


def inline_result_limit(settings: Settings) -> int:
    """The largest result kept in the run item, beside inline arguments (see
    :func:`inline_payload_limit`; larger payloads are references to the blob store)."""
    return DYNAMODB_ITEM_LIMIT - RUN_ITEM_RESERVE - inline_payload_limit(settings)


def read_fairly(shards: int, limit: int, query: Callable[[str], Iterable[T]]) -> list[T]:
    """Up to ``limit`` items of a sharded index: every shard first gets a share (``limit //
    shards``, at least 1), then shards with more fill what is left, so a backlog in one shard
    cannot starve the others. ``query(shard)`` is a lazy, paged Query of one shard."""
    share = max(1, limit // shards)
    found: list[T] = []
    more: list[Iterator[T]] = []
    for shard in range(shards):
        items = iter(query(str(shard)))
        taken = list(itertools.islice(items, min(share, limit - len(found))))
        found += taken
        if len(taken) == share:
            more.append(items)
    for items in more:
        found += itertools.islice(items, max(0, limit - len(found)))
    return found


def refuse_taken_fence(store: Store, run_id: str, fence: int | None) -> None:
    """After a refused end: raise OutcomeRecorded if the run is live and the position
    the end meant to take (``fence``) was recorded meanwhile (the end takes the next one)."""
    if fence is None or store.get_outcome(run_id, fence) is None:
        return
    run = store.find_run(run_id)
    if run is not None and not run.is_terminal:
        raise OutcomeRecorded(f"run {run_id}: op {fence} has an outcome now")
