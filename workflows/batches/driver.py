"""Driving batches: claim a batch, act on one page of its runs, advance its cursor.

Whoever drives a batch (beat's sweep, ``workflows batch run``, :func:`drive_batch`) claims it with
a write conditioned on its revision, acts on one listing page of runs (a chunk) and advances the
cursor with another such write, then lets it go until the throttle allows the next chunk. A
driver that dies leaves its claim to expire (a lease), and the next driver takes the chunk again
from the cursor: each operation is idempotent per run (a rerun's idempotency key is derived from
the batch id and the run id).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from typing import Any, Callable

from ..client import signal_run
from ..core.background import forks
from ..core.engine import Engine
from ..core.model.batches import (
    MAX_STALLS,
    BatchRecord,
    Progress,
    Selection,
    chunk_size,
    next_chunk_at,
)
from ..core.model.records import Page, RunStatus, TimeRange
from ..core.model.states import BatchState
from ..core.storage.newest import newest_page
from ..core.storage.plans import cut_error
from ..core.storage.tags import limit_count
from ..errors import InvalidBatch, RunEnded, RunNotFound, StorageError, Throttled, WorkflowError
from ..runtime import get_engine
from .api import get_batch

log = logging.getLogger("workflows.batches")


def drive_batch(batch_id: str, *, on_chunk: Callable[[BatchRecord], None] | None = None,
                budget: float | None = None) -> BatchRecord:
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
    simulator's beats), within ``budget`` seconds if given; return how many chunks ran.

    A storage error is logged, never raised: the batch's claim expires and a later tick takes
    its chunk again, and beat's other work (retention after this) goes on."""
    started, ran = time.monotonic(), 0
    try:
        batches = engine.store.live_batches()
    except StorageError:
        log.exception("the batches table cannot be read; batches wait (run 'workflows init-aws' after an upgrade)")
        return 0
    for batch in batches:
        left = None if budget is None else budget - (time.monotonic() - started)
        if left is not None and left <= 0:
            break
        if (batch.due_at or 0.0) > engine.now():
            continue
        try:
            ran += run_chunk(engine, batch, uuid.uuid4().hex, budget=left) is not None
        except StorageError:
            log.exception("batch %s: a chunk failed; it is taken again once its claim expires", batch.batch_id)
    return ran


def run_chunk(engine: Engine, batch: BatchRecord, owner: str, *, budget: float | None = None) -> BatchRecord | None:
    """Claim a live batch, apply its operation to its next page of runs and advance its cursor
    (or end it after its last page). The batch after, or None if another driver or a stop moved
    it first (this driver lets it be). With a ``budget`` (seconds; beat's), the page holds no
    more runs than the batch's last chunk says fit in it."""
    store = engine.store
    claimed = store.claim_batch(batch, owner, engine.now() + engine.settings.lease_seconds)
    if claimed is None:
        return None
    started, timer = engine.now(), time.monotonic()
    size = chunk_size(claimed.rate, engine.settings.sweep_interval, budget, claimed.run_seconds)
    try:
        page = select_page(engine, claimed.selection, claimed.cursor, size)
        progress = dataclasses.replace(apply_page(engine, claimed, page), seconds=time.monotonic() - timer)
    except StorageError as exc:
        if not isinstance(exc, Throttled):  # a throttle passes; a denial or a missing table does not
            stall(engine, claimed, exc)
        raise
    if page.next_cursor is None:
        return store.end_batch(claimed, BatchState.COMPLETED, progress)
    return store.advance_batch(claimed, page.next_cursor, progress, next_chunk_at(started, len(page), claimed.rate))


def stall(engine: Engine, batch: BatchRecord, error: StorageError) -> None:
    """Say on the batch that its chunk failed for the store, and when it is tried again (twice as late
    each time); past ``MAX_STALLS`` in a row, end it ``failed`` with the error (``batch show``, the
    dashboard). A failure to say so is logged: the claim's lease lets the chunk be taken again."""
    text = cut_error(f"{type(error).__name__}: {error}") or ""
    try:
        if batch.stalls + 1 >= MAX_STALLS:
            engine.store.end_batch(dataclasses.replace(batch, stalls=batch.stalls + 1, stalled=text), BatchState.FAILED)
            log.error("batch %s failed: %d chunks in a row failed (%s)", batch.batch_id, MAX_STALLS, text)
            return
        wait = engine.settings.lease_seconds * 2.0 ** batch.stalls
        engine.store.stall_batch(batch, text, engine.now() + wait)
    except StorageError:
        log.warning("batch %s: could not record its failed chunk", batch.batch_id, exc_info=True)


def select_page(engine: Engine, selection: Selection, cursor: str | None, limit: int) -> Page[Any]:
    """One listing page of the runs ``selection`` picks (each with ``run_id``) and the next cursor."""
    s, store = selection, engine.store
    if s.tag is not None:
        return store.list_runs(tag=s.tag, workflow=s.workflow, limit=limit, cursor=cursor,
                               created=TimeRange(s.since, s.until))
    if s.status is not None or s.workflow is not None:
        return store.list_run_summaries(status=s.status, workflow=s.workflow, limit=limit, cursor=cursor,
                                        created=TimeRange(s.since, s.until))
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
