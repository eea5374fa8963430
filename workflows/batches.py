"""Batch operations: cancel, signal, rerun or tag the runs a filter selects, throttled and resumable.

A batch is one item in the store (``core/batches.py``): its operation, its filter, the cursor
of the listing it walks and its counts. Whoever drives it (beat's sweep, ``workflows batch run``,
:func:`drive_batch`) claims it with a write conditioned on its version, acts on one listing page
of runs (a chunk) and advances the cursor with another such write, then lets it go until the
throttle allows the next chunk. A driver that dies leaves its claim to expire (a lease), and
the next driver takes the chunk again from the cursor: each operation is idempotent per run (a
rerun's idempotency key is derived from the batch id and the run id). See docs/guide.md.
"""

from __future__ import annotations

import reprlib
import time
import uuid
from typing import Any

from . import codec
from .client import _check_status, _check_text, _check_time, signal_run
from .core import forks
from .core.batches import (
    COMPLETED,
    OPERATIONS,
    STOPPED,
    BatchRecord,
    Progress,
    Selection,
    chunk_size,
    new_batch_id,
    next_chunk_at,
)
from .core.engine import Engine
from .core.newest import newest_page
from .core.records import Page, RunStatus
from .core.tags import check_tags, limit_count, parse_filter
from .errors import BatchNotFound, InvalidBatch, RunEnded, RunNotFound, StorageError, WorkflowError
from .options import RunFilter, TimeRange
from .runtime import get_engine

__all__ = ["BatchRecord", "RunFilter", "batch_cancel", "batch_rerun", "batch_signal", "batch_tag", "drive_batch",
           "drive_due_batches", "get_batch", "list_batches", "start_batch", "stop_batch"]

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
        _check_text(params.get("name"), "signal name", 256)
        codec.dumps(params.get("payload"), what="batch signal payload", limit=min(max_payload, MAX_BATCH_PAYLOAD))
    if operation == "tag":
        tags = params.get("tags")
        if not isinstance(tags, dict) or not tags:
            raise InvalidBatch(f"batch tag takes tags={{key: value or None}}, got {reprlib.repr(tags)}")
        params = {"tags": check_tags(tags, removals=True)}
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
        SerializationError / InvalidTags / PayloadTooLarge: a filter field, the tags or the payload.
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
                        created_at=now, updated_at=now, due_at=now)
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


def list_batches(limit: int = 50, *, since: float | None = None) -> list[BatchRecord]:
    """The newest batches, live and ended (created since ``since``, if given), newest first."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidBatch(f"limit must be an int in 1..1000, got {reprlib.repr(limit)}")
    store = get_engine().store
    batches = store.live_batches() + store.ended_batches(_check_time(since, "since"))
    return sorted(batches, key=lambda b: b.batch_id, reverse=True)[:limit]


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
        ended = store.end_batch(batch, STOPPED)
        if ended is not None:
            return ended
    raise InvalidBatch(f"batch {batch_id} kept moving; stop it again")


# -- driving ------------------------------------------------------------------------------------------
def drive_batch(batch_id: str, *, on_chunk: Any = None, budget: float | None = None) -> BatchRecord:
    """Drive a batch in this process until it ends (or ``budget`` seconds pass), sleeping
    between chunks as its rate asks; ``on_chunk(batch)`` is called after each chunk. Another
    driver (beat) may take chunks meanwhile; a crash here leaves the rest to them.

    Raises:
        BatchNotFound: no batch has this id.
    """
    engine, owner = get_engine(), uuid.uuid4().hex
    deadline = None if budget is None else time.monotonic() + budget
    while True:
        batch = get_batch(batch_id)
        if not batch.is_live or (deadline is not None and time.monotonic() >= deadline):
            return batch
        wait = (batch.due_at or 0.0) - engine.now()
        if wait > 0:
            time.sleep(min(wait, 1.0))
            continue
        after = run_chunk(engine, batch, owner)
        if after is not None and on_chunk is not None:
            on_chunk(after)


def drive_due_batches(engine: Engine, budget: float | None = None) -> int:
    """One chunk of each live batch whose time has come (beat's sweep, the testing kit, the
    simulator's beats), within ``budget`` seconds if given; return how many chunks ran."""
    started, ran = time.monotonic(), 0
    for batch in engine.store.live_batches():
        if budget is not None and time.monotonic() - started >= budget:
            break
        if (batch.due_at or 0.0) <= engine.now() and run_chunk(engine, batch, uuid.uuid4().hex) is not None:
            ran += 1
    return ran


def run_chunk(engine: Engine, batch: BatchRecord, owner: str) -> BatchRecord | None:
    """Claim a live batch, apply its operation to its next page of runs and advance its cursor
    (or end it after its last page). The batch after, or None if another driver or a stop moved
    it first (this driver lets it be)."""
    store = engine.store
    claimed = store.claim_batch(batch, owner, engine.now() + engine.settings.lease_seconds)
    if claimed is None:
        return None
    started = engine.now()
    page = select_page(engine, claimed.selection, claimed.cursor,
                       chunk_size(claimed.rate, engine.settings.sweep_interval))
    progress = apply_page(engine, claimed, page)
    if page.next_cursor is None:
        return store.end_batch(claimed, COMPLETED, progress)
    return store.advance_batch(claimed, page.next_cursor, progress, next_chunk_at(started, len(page), claimed.rate))


def select_page(engine: Engine, selection: Selection, cursor: str | None, limit: int) -> Page[Any]:
    """One listing page of the runs ``selection`` picks (each with ``run_id``) and the next cursor."""
    s, store = selection, engine.store
    if s.tag is not None:
        return store.list_runs(tag=s.tag, workflow=s.workflow, limit=limit, cursor=cursor, since=s.since,
                               until=s.until)
    if s.status is not None or s.workflow is not None:
        return store.list_run_summaries(status=s.status, workflow=s.workflow, limit=limit, cursor=cursor,
                                        since=s.since, until=s.until)
    return newest_page(store, limit, cursor, s.since, s.until)


def apply_page(engine: Engine, batch: BatchRecord, page: Page[Any]) -> Progress:
    """Apply the batch's operation to each run of a page: what it did, run by run. A run whose
    operation raises an error of its own is counted failed (the error kept); a storage error
    stops the chunk (raised), which the next driver takes again from the cursor."""
    done = skipped = 0
    errors: list[tuple[str, str]] = []
    for run in page:
        try:
            if apply_to_run(engine, batch, run.run_id):
                done += 1
            else:
                skipped += 1
        except (RunNotFound, RunEnded):
            skipped += 1
        except StorageError:
            raise  # infrastructure never decides a run's count: the chunk is taken again
        except WorkflowError as exc:
            errors.append((run.run_id, f"{type(exc).__name__}: {exc}"))
    return Progress(len(page), done, len(errors), skipped, tuple(errors))


def apply_to_run(engine: Engine, batch: BatchRecord, run_id: str) -> bool:
    """Apply the batch's operation to one run, idempotently: True if it acted, False if it left
    the run alone (ended already; not failed, for a rerun; live, for a tag)."""
    store, op, params = engine.store, batch.operation, batch.params
    if op == "signal":
        signal_run(engine, run_id, params["name"], params.get("payload"))
        return True
    run = store.find_run(run_id)
    if run is None:
        return False
    if op == "cancel":
        if run.is_terminal and run.status != RunStatus.CONTINUED:
            return False
        return engine.request_cancel(run_id) is not None
    if op == "rerun":
        if run.status != RunStatus.FAILED:
            return False
        forks.rerun(engine, run_id, idempotency_key=f"batch:{batch.batch_id}:{run_id}")
        return True
    return _tag(engine, run_id, params["tags"])


def _tag(engine: Engine, run_id: str, changes: dict[str, str | None]) -> bool:
    """Merge ``changes`` into an ended run's tags (a retried chunk finds them merged already)."""
    for _ in range(3):
        run = engine.store.find_run(run_id)
        if run is None or not run.is_terminal:
            return False
        before = dict(run.tags or {})
        after = {k: v for k, v in {**before, **changes}.items() if v is not None}
        limit_count(after)
        if after == before or engine.store.tag_ended_run(run, after):
            return True
    raise InvalidBatch(f"run {run_id}: its tags kept changing")
