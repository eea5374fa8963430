"""Payload objects no run will ever mark ended: run prefixes of the payload bucket whose run does not exist.

A run's objects are marked ended by beat's retention sweep (``core/storage/retention.py``) and then
expire by the bucket's lifecycle rule. Objects that never get the mark, so never expire:

* objects written for a run that was never created: a start, a fork or a continue-as-new whose
  process died between the object and the run's write, or a start with an idempotency key
  whose run already existed (the new run id's object stays behind);
* objects written for an ended run after its sweep (a fan-out branch still running long
  after its run was cancelled);
* objects of the older layout (``payloads/<sha256>``, before runs owned their objects).

The first two show as run prefixes whose run no longer exists (its items expired, or it never
existed); :func:`find_orphans` lists those whose newest object is older than a grace period (a
run being created right now has its objects written a moment before its item).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..storage.payloads import KEY_PREFIX, owner_of

if TYPE_CHECKING:
    from ..engine import Engine


@dataclass(frozen=True)
class OrphanPrefix:
    """A run prefix of the bucket whose run does not exist."""

    run_id: str
    keys: list[str]
    newest: float  # the last write of its newest object, epoch seconds


@dataclass(frozen=True)
class BucketSurvey:
    """What :func:`find_orphans` found."""

    orphans: list[OrphanPrefix]
    legacy: list[str]  # objects of the older layout: kept (see docs/payloads.md)


def find_orphans(engine: Engine, min_age: float) -> BucketSurvey:
    """List the bucket (one request per 1,000 objects) and read the run of every prefix (one GetItem
    each); return the prefixes of runs that do not exist whose objects are all ``min_age`` seconds old."""
    blobs = engine.payloads.blobs
    if blobs is None:
        return BucketSurvey([], [])
    by_run: dict[str, list[tuple[str, float]]] = {}
    legacy = []
    for key, written in blobs.list_blobs(KEY_PREFIX):
        owner = owner_of(key)
        if owner is None:
            legacy.append(key)
        else:
            by_run.setdefault(owner, []).append((key, written))
    cutoff = engine.now() - min_age
    orphans = []
    for run_id, objects in sorted(by_run.items()):
        newest = max(written for _, written in objects)
        if newest <= cutoff and engine.store.find_run(run_id) is None:
            orphans.append(OrphanPrefix(run_id, [key for key, _ in objects], newest))
    return BucketSurvey(orphans, legacy)


def delete_orphans(engine: Engine, survey: BucketSurvey) -> int:
    """Delete the objects of the orphan prefixes of ``survey`` (one request each); return how many."""
    blobs = engine.payloads.blobs
    deleted = 0
    for orphan in survey.orphans:
        for key in orphan.keys:
            if blobs is not None:
                blobs.delete_blob(key)
                deleted += 1
    return deleted
