"""Starting, reading, listing and stopping batches (the public calls; ``driver.py`` runs them)."""

from __future__ import annotations

import reprlib
from typing import Any

from .. import codec
from ..client import _check_status, _check_text, _check_time
from ..core.engine import Engine
from ..core.model.batches import (
    INDEX_SETTLE_SECONDS,
    OPERATIONS,
    BatchRecord,
    Selection,
    batch_id_floor,
    new_batch_id,
)
from ..core.model.names import check_name
from ..core.model.states import BatchState
from ..core.storage.tags import check_tags, limit_count, parse_filter
from ..errors import BatchNotFound, InvalidBatch
from ..options import RunFilter, TimeRange
from ..runtime import get_engine

#: The largest signal payload a batch carries (it is kept in the batch's item).
MAX_BATCH_PAYLOAD = 64 * 1024
#: Conditional writes a stop retries when a driver moved the batch meanwhile.
STOP_ATTEMPTS = 20


def selection_of(filter: RunFilter, now: float) -> Selection:
    """The checked selection of a filter, bounded by ``now`` (runs started later are never selected).

    Raises:
        InvalidBatch: ``filter`` is not a RunFilter, selects nothing in particular, or combines
            ``tag`` with ``status``.
        SerializationError / InvalidTags: a field is invalid (naming it).
    """
    if not isinstance(filter, RunFilter):
        raise InvalidBatch(f"a batch takes a RunFilter, got {type(filter).__name__}")
    created = filter.created or TimeRange()
    if not isinstance(created, TimeRange):
        raise InvalidBatch(f"RunFilter.created must be a TimeRange, got {type(created).__name__}")
    name = getattr(filter.workflow, "name", filter.workflow)
    if name is not None:
        _check_text(name, "workflow")
    status = _check_status(filter.status)
    tag = None if filter.tag is None else parse_filter(filter.tag)
    if tag is not None and status is not None:
        raise InvalidBatch("a batch filter's tag does not combine with status (as in list_runs)")
    since, until = _check_time(created.since, "since"), _check_time(created.until, "until")
    if status is None and name is None and tag is None and since is None and until is None:
        raise InvalidBatch("a batch filter must select by status, workflow, tag or creation time "
                           "(it never acts on every run by default)")
    return Selection(status, name, tag, since, now if until is None else min(until, now))


def _params(operation: str, params: dict[str, Any], max_payload: int) -> dict[str, Any]:
    """The operation's checked parameters."""
    allowed = {"cancel": {"reason"}, "signal": {"name", "payload"}, "rerun": set(), "tag": {"tags"}}[operation]
    unknown = set(params) - allowed
    if unknown:
        raise InvalidBatch(f"batch {operation} takes {sorted(allowed) or 'no parameters'}, not {sorted(unknown)}")
    if operation == "cancel" and params.get("reason") is not None:
        _check_text(params["reason"], "reason", 1000)
    if operation == "signal":
        check_name(_check_text(params.get("name"), "signal name", 256), "signal name")  # as send_signal does
        codec.dumps(params.get("payload"), what="batch signal payload", limit=min(max_payload, MAX_BATCH_PAYLOAD))
    if operation == "tag":
        tags = params.get("tags")
        if not isinstance(tags, dict) or not tags:
            raise InvalidBatch(f"batch tag takes tags={{key: value or None}}, got {reprlib.repr(tags)}")
        checked = check_tags(tags, removals=True)
        limit_count({k: v for k, v in checked.items() if v is not None})  # more could never be set on a run
        params = {"tags": checked}
    return {k: v for k, v in params.items() if v is not None or k == "payload"}


def start_batch(operation: str, filter: RunFilter, *, rate: float | None = None, **params: Any) -> str:
    """Start a batch: apply ``operation`` (``cancel``, ``signal``, ``rerun`` or ``tag``) to every run
    ``filter`` selects that was created before now, at most ``rate`` runs per second
    (``WORKFLOWS_BATCH_RATE`` by default). Beat drives it (or ``workflows batch run ID``); return its id.

    Parameters by operation: cancel ``reason=`` (kept on the batch); signal ``name=``, ``payload=``;
    tag ``tags={key: value or None}`` (ended runs only); rerun none.

    Raises:
        InvalidBatch: an unknown operation, a bad parameter or rate, or a filter that selects
            nothing in particular.
        SerializationError / InvalidTags / PayloadTooLarge: a filter field (a time out of range
            included), the tags (more than a run can carry) or the payload.
        InvalidName: a signal name that breaks the rules of names.
    """
    engine = get_engine()
    return create_batch(engine, operation, filter, rate=rate, **params).batch_id


def create_batch(engine: Engine, operation: str, filter: RunFilter, *, rate: float | None = None,
                 **params: Any) -> BatchRecord:
    """:func:`start_batch` on a given engine; the batch as stored."""
    if operation not in OPERATIONS:
        raise InvalidBatch(f"batch operation must be one of {', '.join(OPERATIONS)}, got {reprlib.repr(operation)}")
    rate = engine.settings.batch_rate if rate is None else rate
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 10_000:
        raise InvalidBatch(f"rate must be runs per second in (0, 10000], got {reprlib.repr(rate)}")
    checked = _params(operation, params, engine.settings.max_payload_bytes)
    now = engine.now()
    batch = BatchRecord(new_batch_id(now), operation, selection_of(filter, now), checked, float(rate),
                        created_at=now, updated_at=now, due_at=now + INDEX_SETTLE_SECONDS)
    engine.store.create_batch(batch)
    return batch


def batch_cancel(filter: RunFilter, *, reason: str | None = None, rate: float | None = None) -> str:
    """Cancel the runs ``filter`` selects (see :func:`start_batch`); ended runs are skipped."""
    return start_batch("cancel", filter, rate=rate, reason=reason)


def batch_signal(filter: RunFilter, name: str, payload: Any = None, *, rate: float | None = None) -> str:
    """Send signal ``name`` with ``payload`` to the runs ``filter`` selects (see :func:`start_batch`)."""
    return start_batch("signal", filter, rate=rate, name=name, payload=payload)


def batch_rerun(filter: RunFilter, *, rate: float | None = None) -> str:
    """Rerun each failed run ``filter`` selects from its failed step, once per run (see :func:`start_batch`)."""
    return start_batch("rerun", filter, rate=rate)


def batch_tag(filter: RunFilter, tags: dict[str, str | None], *, rate: float | None = None) -> str:
    """Merge ``tags`` (None removes a key) into the tags of the ended runs ``filter`` selects."""
    return start_batch("tag", filter, rate=rate, tags=tags)


def get_batch(batch_id: str) -> BatchRecord:
    """A batch and its progress.

    Raises:
        BatchNotFound: no batch has this id (or it expired, the retention after its end).
    """
    batch = get_engine().store.get_batch(_check_text(batch_id, "batch_id"))
    if batch is None:
        raise BatchNotFound(batch_id)
    return batch


def list_batches(limit: int = 50, *, since: float | None = None, before: str | None = None) -> list[BatchRecord]:
    """The newest batches, live and ended, newest first: up to ``limit`` created since ``since``
    (if given) and, for the next page, with ids before ``before`` (the last id of the page shown).
    At most 2 requests, whatever the number of batches kept.

    Raises:
        InvalidBatch: ``limit`` is not an int in 1..1000.
        SerializationError: ``since`` is not a time in range, or ``before`` not a short text.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidBatch(f"limit must be an int in 1..1000, got {reprlib.repr(limit)}")
    since = _check_time(since, "since")
    if before is not None:
        _check_text(before, "before")
    found = get_engine().store.newest_batches(limit, before)
    return found if since is None else [b for b in found if b.batch_id >= batch_id_floor(since)]


def stop_batch(batch_id: str) -> BatchRecord:
    """Stop a live batch: no further chunk starts (a chunk being applied may still finish its runs).
    Stopping an ended batch returns it as it is.

    Raises:
        BatchNotFound: no batch has this id.
    """
    store = get_engine().store
    for _ in range(STOP_ATTEMPTS):
        batch = get_batch(batch_id)
        if not batch.is_live:
            return batch
        ended = store.end_batch(batch, BatchState.STOPPED)
        if ended is not None:
            return ended
    raise InvalidBatch(f"batch {batch_id} kept moving; stop it again")


