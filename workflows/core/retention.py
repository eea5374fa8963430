"""Retention: when an ended run's items expire, and the sweep that stamps them.

An ended run keeps its items for ``WORKFLOWS_RETENTION`` after its end; then DynamoDB's
TTL deletes them. A live run's items carry no TTL (a run may live for months), so the end
sets the run item's TTL (``retain_until = ended_at + retention``) and puts the run in a
sparse, sharded retention index, in the same write that ends it. Beat's sweep Queries that
index for runs that ended more than a lease ago and stamps each of their items with the
same TTL (``Store.retain_run``, idempotent), then takes the run out of the index. A sweep
that dies half-way leaves the run in the index: the next one stamps again.

Before its items, the sweep marks the run's payload objects ended (:func:`mark_payloads_ended`):
every object under the run's prefix, found by listing it, is copied onto itself with the ended
tag, which the bucket's lifecycle rule filters on, and which S3 counts as the object's last
write, so the rule deletes it ``payload_expiry_days`` (at least the retention) after the mark:
never before the run's items. A live run's objects carry no tag, so they never expire.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..settings import Settings
from .payloads import run_prefix

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("workflows.retention")


def retain_until(ended_at: float, settings: Settings) -> int | None:
    """The TTL (epoch seconds, rounded up) of an ended run's items; None when retention is off."""
    if settings.retention is None:
        return None
    return -int(-(ended_at + settings.retention) // 1)


def retention_delay(settings: Settings) -> float:
    """How long after its end a run's items are stamped: a lease, so that a step still running
    when its run ended (a fan-out branch recording its result) has written its items."""
    return settings.lease_seconds


def retain_ended_runs(engine: Engine, limit: int = 100, budget: float | None = None) -> int:
    """Stamp the items of runs that ended at least :func:`retention_delay` ago; return how many.

    ``budget``: wall-clock seconds after which no further run is started (beat passes one, so
    that stamping, a dozen requests a run, never holds up the timers and schedules of its next
    tick; the runs left wait in the index for the next sweep).
    """
    stamped, stop = 0, None if budget is None else time.monotonic() + budget
    before = engine.now() - retention_delay(engine.settings)
    try:
        run_ids = engine.store.runs_to_retain(before, limit=limit)
    except Exception:  # e.g. a runs table made before the by_retention index: timers and recovery go on
        log.exception("the retention index of the runs table cannot be read; ended runs are not stamped with "
                      "their TTL (see docs/retention.md, Limits)")
        return 0
    for run_id in run_ids:
        if stop is not None and stamped and time.monotonic() >= stop:
            break
        try:
            mark_payloads_ended(engine, run_id)  # first: a sweep that dies after the marks marks them again
            if engine.store.retain_run(run_id):
                stamped += 1
        except Exception:
            log.exception("run %s: stamping its items with their TTL failed; the next sweep tries again", run_id)
    return stamped


def mark_payloads_ended(engine: Engine, run_id: str) -> int:
    """Mark every payload object of an ended run ended (one list request per 1,000 objects, one
    copy per object); return how many. Nothing when this deployment sends no payload to the bucket.

    The prefix is listed rather than the references collected from the run's items, because
    some objects are referenced by no item: a dispatched step's arguments travel in its message
    only, and an object whose record was never written (its writer died) is referenced by nothing.
    """
    blobs, settings = engine.payloads.blobs, engine.settings
    if blobs is None or settings.inline_payload_bytes >= settings.max_payload_bytes:
        return 0
    marked = 0
    for key, _ in blobs.list_blobs(run_prefix(run_id)):
        marked += blobs.mark_ended(key)
    return marked


def fan_out_positions(outcome_kinds: dict[int, str], cursor: int, waiting: dict[str, object] | None) -> list[int]:
    """The op positions of a run's fan-outs, whose joins (``<run id>#<pos>``) hold branch results
    and branch attempts: every recorded ``parallel`` outcome, and the op in flight if it is one."""
    positions = {pos for pos, kind in outcome_kinds.items() if kind in ("parallel", "first_of")}
    if cursor >= 0 and (waiting or {}).get("kind") in ("parallel", "first_of"):
        positions.add(cursor)
    return sorted(positions)
