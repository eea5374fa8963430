"""Reading what a run publishes: its events' latest values and its progress stream (``core.ops.events``).

``get_event`` is one GetItem when the key is set, else one more read of the run per poll;
``event_values`` and ``read_stream`` are one Query of the run's history partition each.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from .core.engine import Engine
from .core.model.records import RunRecord, RunStatus
from .core.ops.events import (
    EVENT_SEQ_BASE,
    EVENT_SEQ_SPAN,
    MAX_STREAM_ENTRIES,
    STREAM_SEQ_BASE,
    check_key,
    event_value_seq,
    stream_seq,
)
from .core.storage.ports import Store
from .durations import Duration, to_seconds
from .errors import EventNotSet, EventTimeout, InvalidInput, RunNotFound
from .runtime import get_engine

#: The longest pause between two polls of ``get_event``.
MAX_POLL = 1.0


@dataclass(frozen=True)
class StreamPage:
    """Entries of a run's progress stream from an offset.

    Attributes:
        entries: the values, in append order, from the offset asked for.
        next_offset: the offset to read from next.
        ended: the run had ended before the read: no entry comes after these (the stream is closed).
    """

    entries: list[Any]
    next_offset: int
    ended: bool


def _latest(store: Store, run_id: str, key: str) -> tuple[bool, str | None]:
    """Whether run ``run_id`` set event ``key``, and its latest value's payload text."""
    record = store.get_event(run_id, event_value_seq(key))
    if record is None or record.name != key:
        return False, None
    return True, record.data


def _run(store: Store, run_id: str) -> RunRecord:
    run = store.find_run(run_id)
    if run is None:
        raise RunNotFound(run_id)
    return run


def lookup_event(store: Store, run_id: str, key: str) -> tuple[bool, str | None]:
    """One look at event ``key`` of run ``run_id``: (True, its payload text) once set, (False, None)
    while the run is live.

    Raises:
        RunNotFound: no run has this id.
        EventNotSet: the run ended (or continued as a new run) without setting ``key``.
    """
    found = _latest(store, run_id, key)
    if found[0]:
        return found
    run = _run(store, run_id)
    if not run.is_terminal:
        return False, None
    found = _latest(store, run_id, key)  # set between the two reads, before the run ended
    if found[0]:
        return found
    then = f"; it continued as run {run.continued_to}, which has its own events" if (
        run.status == RunStatus.CONTINUED and run.continued_to) else ""
    raise EventNotSet(f"run {run_id} ended ({run.status}) without setting event {key!r}{then}")


def wait_for_event(store: Store, run_id: str, key: str, timeout: Duration | None,
                   pause: Callable[[float], None] = time.sleep, poll: float = 0.1) -> str | None:
    """The payload text of event ``key`` of run ``run_id``, polling (backing off to :data:`MAX_POLL`)
    until it is set or ``timeout`` (None: no limit) passes."""
    check_key(key)
    limit = None if timeout is None else to_seconds(timeout, what="get_event timeout")
    deadline = None if limit is None else time.monotonic() + limit
    while True:
        found, text = lookup_event(store, run_id, key)
        if found:
            return text
        if deadline is not None and time.monotonic() >= deadline:
            raise EventTimeout(f"run {run_id} did not set event {key!r} within {limit}s")
        pause(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
        poll = min(poll * 1.5, MAX_POLL)


def get_event(run_id: str, key: str, timeout: Duration | None = None, poll: float = 0.1) -> Any:
    """The latest value run ``run_id`` set for event ``key``, waiting until it is set.

    Args:
        timeout: how long to wait (seconds, ``"30s"`` or a timedelta); None waits without limit,
            0 looks once.
        poll: the first pause between two looks (it grows to one second).

    Raises:
        EventTimeout: the timeout passed first.
        EventNotSet: the run ended (or continued as a new run) without setting ``key``.
        RunNotFound: no run has this id.
        InvalidEventKey: the key breaks the rules.
    """
    engine = get_engine()
    return engine.payloads.decode(wait_for_event(engine.store, run_id, key, timeout, poll=poll))


def event_values(run_id: str) -> dict[str, Any]:
    """Every event key run ``run_id`` set, with its latest value (one Query), sorted by key."""
    engine = get_engine()
    records = engine.store.read_history(run_id, after_seq=EVENT_SEQ_BASE - 1,
                                        until_seq=EVENT_SEQ_BASE + EVENT_SEQ_SPAN - 1)
    return {r.name: engine.payloads.decode(r.data) for r in sorted(records, key=lambda r: r.name or "") if r.name}


def read_stream(run_id: str, offset: int = 0) -> StreamPage:
    """The entries of run ``run_id``'s progress stream from ``offset`` (one read of the run, one Query).

    Raises:
        RunNotFound: no run has this id.
        InvalidInput: ``offset`` is not a whole number of at least 0.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput(f"a stream offset is a whole number of at least 0, got {offset!r}")
    return stream_page(get_engine(), run_id, offset)


def stream_page(engine: Engine, run_id: str, offset: int) -> StreamPage:
    """:func:`read_stream` on a given engine (``offset`` checked)."""
    ended = _run(engine.store, run_id).is_terminal  # read first: an ended run's entries are all written
    if offset >= MAX_STREAM_ENTRIES:
        return StreamPage([], offset, ended)
    records = engine.store.read_history(run_id, after_seq=stream_seq(offset) - 1,
                                        until_seq=STREAM_SEQ_BASE + MAX_STREAM_ENTRIES - 1)
    entries = [engine.payloads.decode(r.data) for r in records]
    return StreamPage(entries, offset + len(entries), ended)
