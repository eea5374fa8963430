"""Events and the progress stream: what a run publishes to its clients while it runs.

``set_event(key, value)`` and ``write_stream(value)`` are durable ops. Each one's outcome
record (``kind`` ``event`` or ``stream``, the value as payload text) is written in **one
transaction** with a second item in the run's own history partition, while the run is live:

* an event's **latest value** item, at the fixed key :func:`event_value_seq` of its key (a
  hash in a negative range no op takes): a client reads it with one GetItem;
* a stream **entry** item, at :func:`stream_seq` of its offset (a negative range too): a client
  reads the entries from an offset with one Query.

So a replay writes nothing again, a lost response or a duplicate resume writes once, and
both items sit in the run's history partition, which the retention sweep stamps with the
run's TTL after its end (``read_history`` from 0 never returns them). A stream is bounded:
at most :data:`MAX_STREAM_ENTRIES` entries and :data:`MAX_STREAM_BYTES` bytes of payload per
run; an append beyond is recorded as refused and raises :class:`StreamFull` (on every replay).
"""

from __future__ import annotations

import hashlib
import re
import reprlib
from typing import TYPE_CHECKING, Any

from ...errors import InvalidEventKey, StreamFull
from ..model.records import EventRecord, OpKind, event_seq
from ..model.states import EventStatus
from ..replay.commands import Publish
from ..replay.commit import apply
from ..storage.payloads import reference_of

if TYPE_CHECKING:
    from ..replay.context import WorkflowContext

MAX_KEY_LENGTH = 128
#: A key: letters, digits and ``_ . : - /``.
KEY_PATTERN = re.compile(r"[A-Za-z0-9_.:/-]+")
MAX_STREAM_ENTRIES = 1000
#: Payload bytes of a run's stream entries (a large entry kept in the payload bucket counts its full size).
MAX_STREAM_BYTES = 1_000_000
#: Latest-value items: ``EVENT_SEQ_BASE + (hash of the key mod EVENT_SEQ_SPAN)``.
EVENT_SEQ_BASE = -3 * 10**15
EVENT_SEQ_SPAN = 10**15
#: Stream entries: ``STREAM_SEQ_BASE + offset``.
STREAM_SEQ_BASE = -(10**15)
LATEST = "latest"  # the status of a latest-value item


def check_key(key: Any) -> str:
    """An event key, or InvalidEventKey naming the rule it breaks."""
    if not isinstance(key, str) or len(key) > MAX_KEY_LENGTH or not KEY_PATTERN.fullmatch(key):
        raise InvalidEventKey(f"event key {reprlib.repr(key)} must be 1..{MAX_KEY_LENGTH} characters of letters, "
                              "digits and _ . : - /")
    return key


def event_value_seq(key: str) -> int:
    """The history sort key of the latest value of event ``key`` (a 50-bit hash: the item also
    holds the key, and a reader ignores an item of another key)."""
    digest = hashlib.sha256(key.encode()).digest()
    return EVENT_SEQ_BASE + int.from_bytes(digest[:8], "big") % EVENT_SEQ_SPAN


def stream_seq(offset: int) -> int:
    """The history sort key of stream entry ``offset``."""
    return STREAM_SEQ_BASE + offset


def payload_size(text: str | None) -> int:
    """The bytes of a stored payload: its text, or the object a reference names."""
    ref = reference_of(text)
    return ref.size if ref is not None else len((text or "").encode())


def set_event(ctx: WorkflowContext, key: str, value: Any) -> None:
    """Set event ``key`` of the run to ``value`` (an op, recorded once)."""
    check_key(key)
    pos, event = ctx.next_op(OpKind.EVENT, key)
    if event is not None:
        return
    text = ctx.encode(value, f"event {key!r}")
    record = EventRecord(run_id=ctx.run.run_id, seq=event_seq(pos), kind=OpKind.EVENT.value, status="set",
                         at=ctx.now(), name=key, data=text)
    latest = EventRecord(run_id=ctx.run.run_id, seq=event_value_seq(key), kind=OpKind.EVENT.value, status=LATEST,
                         at=record.at, name=key, data=text)
    _recorded(ctx, record, apply(ctx.store, Publish(record, latest)))


def write_stream(ctx: WorkflowContext, value: Any) -> int:
    """Append ``value`` to the run's progress stream (an op, recorded once); return its offset.

    Raises:
        StreamFull: the stream holds its maximum of entries or bytes (the refusal is recorded).
    """
    pos, event = ctx.next_op(OpKind.STREAM, None)
    offset, used = ctx.streamed
    if event is None:
        text = None if offset >= MAX_STREAM_ENTRIES else ctx.encode(value, "stream entry")
        full = _full(offset, used, text)
        if full:
            event = ctx.record(pos, OpKind.STREAM, EventStatus.REFUSED, error=full)
        else:
            record = EventRecord(run_id=ctx.run.run_id, seq=event_seq(pos), kind=OpKind.STREAM.value,
                                 status="appended", at=ctx.now(), data=text)
            entry = EventRecord(run_id=ctx.run.run_id, seq=stream_seq(offset), kind=OpKind.STREAM.value,
                                status="appended", at=record.at, data=text)
            event = _recorded(ctx, record, apply(ctx.store, Publish(record, entry)))
    if event.status == EventStatus.REFUSED:
        raise StreamFull(event.error or "the run's stream is full")
    ctx.streamed = (offset + 1, used + payload_size(event.data))
    return offset


def published(records: list[EventRecord]) -> list[EventRecord]:
    """The latest-value and stream items the op records ``records`` (a run's history, in order) wrote:
    what a fork that copies those records must copy too (``core.background.forks``)."""
    latest: dict[str, EventRecord] = {}
    entries: list[EventRecord] = []
    for record in records:
        if not record.is_outcome or record.seq < 0:
            continue
        if record.kind == OpKind.EVENT.value and record.name:
            latest[record.name] = EventRecord(run_id=record.run_id, seq=event_value_seq(record.name),
                                              kind=record.kind, status=LATEST, at=record.at, name=record.name,
                                              data=record.data)
        elif record.kind == OpKind.STREAM.value and record.status != EventStatus.REFUSED:
            entries.append(EventRecord(run_id=record.run_id, seq=stream_seq(len(entries)), kind=record.kind,
                                       status=record.status, at=record.at, data=record.data))
    return [*latest.values(), *entries]


def _full(offset: int, used: int, text: str | None) -> str | None:
    """Why an append of payload ``text`` at ``offset`` (``used`` bytes before) is refused, if it is."""
    if offset >= MAX_STREAM_ENTRIES:
        return f"a run's stream holds at most {MAX_STREAM_ENTRIES} entries"
    size = payload_size(text)
    if used + size > MAX_STREAM_BYTES:
        return f"a run's stream holds at most {MAX_STREAM_BYTES} bytes ({used} used, this entry {size})"
    return None


def _recorded(ctx: WorkflowContext, record: EventRecord, applied: bool) -> EventRecord:
    """The op's record: ``record`` if its write applied, else the one another resume wrote."""
    if not applied:
        existing = ctx.store.get_outcome(ctx.run.run_id, record.pos)
        if existing is None:
            raise ctx.stopped("the run has ended")
        record = existing
    ctx.history.add(record)
    ctx.engine.cache.remember(record)
    return record
