"""Batch operations: what a batch is, the runs it selects, and its throttle (pure; no store calls).

A batch applies one operation (cancel, signal, rerun, tag) to the runs a filter selects, a
page at a time. Its item in the ``batches`` table holds the operation, the filter, the
listing cursor and the counts; every write to it is conditioned on its revision (stored as ``version``), so two
processes never both advance it (``core/storage/writes/batches.py``). The driver that applies the
operation to each run lives beside the per-run operations it reuses (``workflows/batches.py``).
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .states import BatchState

#: The operations a batch applies to each run it selects.
OPERATIONS = ("cancel", "signal", "rerun", "tag")
#: Chunks in a row that may fail for the store (not a throttle: an access denied, a missing table,
#: a server error) before the batch ends ``failed`` with the error; each waits twice as long as the one
#: before it (from a lease), so 6 span about five hours at the default lease.
MAX_STALLS = 6
#: The partitions of the ``batches`` table: live batches (what beat Queries) and ended ones.
LIVE_PART, ENDED_PART = "live", "ended"
#: A batch's first chunk waits this long after its creation: the listing indexes are eventually
#: consistent (DynamoDB's GSIs lag their table by up to a second or so), and the batch selects every
#: run created before it, so it reads them once they show every such run. The wait is measured by two
#: clocks (the creator's sets ``due_at``, a beat's compares), so it covers an index up to 3 s late
#: plus a run's creator and the batch's creator each 2 s off, and the beat 2 s ahead: 3 + 4 + 4 = 11,
#: with a second to spare.
INDEX_SETTLE_SECONDS = 12.0
#: The most runs one chunk (one listing page, one cursor advance) takes.
MAX_CHUNK = 100
#: The failures a batch keeps (the latest), each a run id and its error text.
KEPT_ERRORS = 10
#: The longest error text kept per failed run.
ERROR_CHARS = 300


@dataclass(frozen=True)
class Selection:
    """The runs a batch selects: the listing filters of ``list_runs``.

    Attributes:
        status: a run status, or None.
        workflow: a workflow name, or None.
        tag: ``(key, value)``, or None (does not combine with ``status``).
        since: the earliest creation time (epoch seconds), or None.
        until: the latest creation time; a batch bounds it by its own creation, so runs started
            after the batch are never selected.
    """

    status: str | None = None
    workflow: str | None = None
    tag: tuple[str, str] | None = None
    since: float | None = None
    until: float | None = None

    def to_json(self) -> str:
        """The selection as stored."""
        return json.dumps({"status": self.status, "workflow": self.workflow,
                           "tag": list(self.tag) if self.tag else None, "since": self.since, "until": self.until},
                          separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Selection:
        """The selection stored as ``text``."""
        data = json.loads(text)
        tag = data.get("tag")
        return cls(data.get("status"), data.get("workflow"), (tag[0], tag[1]) if tag else None,
                   data.get("since"), data.get("until"))

    def describe(self) -> str:
        """The filter in words (``status=suspended workflow=order``)."""
        parts = [f"status={self.status}" if self.status else "", f"workflow={self.workflow}" if self.workflow else "",
                 f"tag={self.tag[0]}={self.tag[1]}" if self.tag else "",
                 f"since={_utc(self.since)}" if self.since is not None else "",
                 f"until={_utc(self.until)}" if self.until is not None else ""]
        return " ".join(p for p in parts if p) or "every run"


def _utc(epoch: float) -> str:
    """Epoch seconds as a UTC time to the second (``2026-12-05T04:34:57Z``)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class BatchRecord:
    """A batch and its progress.

    Attributes:
        batch_id: its id (sorts by creation time).
        operation: one of :data:`OPERATIONS`.
        selection: the runs it selects.
        params: the operation's parameters (``reason``; ``name`` and ``payload``; ``tags``).
        rate: the most runs per second it acts on.
        state: ``running``, ``completed`` or ``stopped``.
        cursor: the listing cursor of the next page (None: the first page, or the end once ended).
        selected, done, failed, skipped: runs the batch has listed; acted on; whose operation
            failed; left alone (ended already, not failed for a rerun, expired).
        errors: the latest failures, ``[run_id, error]`` pairs.
        due_at: when a driver may take the batch (its next chunk's time, or its driver's lease).
        run_seconds: how long its last chunk took per run (what a driver with a time budget sizes
            its chunk by).
        owner: the driver holding it, if any.
        revision: +1 on every write (each write is conditioned on the revision read; stored as ``version``).
        stalls: chunks in a row that failed for the store (reset by a chunk that succeeds).
        stalled: the last such chunk's error (kept when the batch ends ``failed``).
    """

    batch_id: str
    operation: str
    selection: Selection
    params: dict[str, Any] = field(default_factory=dict)
    rate: float = 20.0
    state: str = BatchState.RUNNING
    cursor: str | None = None
    selected: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[list[str]] = field(default_factory=list)
    created_at: float = 0.0
    updated_at: float = 0.0
    ended_at: float | None = None
    due_at: float | None = None
    owner: str | None = None
    revision: int = 0
    retain_until: float | None = None
    run_seconds: float | None = None
    stalls: int = 0
    stalled: str | None = None

    @property
    def is_live(self) -> bool:
        """Whether the batch still has runs to act on."""
        return self.state == BatchState.RUNNING

    def counts(self) -> dict[str, int]:
        """Its progress: selected, done, failed, skipped."""
        return {"selected": self.selected, "done": self.done, "failed": self.failed, "skipped": self.skipped}

    def to_dict(self) -> dict[str, Any]:
        """The batch as JSON data (the CLI's ``--json``, the dashboard)."""
        return {"batch_id": self.batch_id, "operation": self.operation, "filter": json.loads(self.selection.to_json()),
                "params": self.params, "rate": self.rate, "state": self.state, **self.counts(),
                "errors": self.errors, "created_at": self.created_at, "updated_at": self.updated_at,
                "ended_at": self.ended_at, "stalled": self.stalled}


@dataclass(frozen=True)
class Progress:
    """What one chunk did: its counts and failures, and how long it took (seconds)."""

    selected: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    errors: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0

    def run_seconds(self, before: float | None) -> float | None:
        """Seconds per run of this chunk (``before`` if it had no run)."""
        return self.seconds / self.selected if self.selected else before


def new_batch_id(now: float) -> str:
    """A fresh batch id that sorts by creation time (milliseconds, then 8 random hex digits)."""
    return f"{batch_id_floor(now)}-{uuid.uuid4().hex[:8]}"


def batch_id_floor(now: float) -> str:
    """The lowest id of a batch created at ``now`` or later (ids sort by creation time)."""
    return f"{int(now * 1000):013d}"


def chunk_size(rate: float, interval: float, budget: float | None = None, run_seconds: float | None = None) -> int:
    """Runs per chunk: a driver's interval's worth at ``rate``, 1 to :data:`MAX_CHUNK`; with a
    ``budget`` (seconds) and the batch's measured ``run_seconds`` per run, no more than fit in it."""
    size = max(1, min(MAX_CHUNK, math.floor(rate * interval)))
    if budget is not None and run_seconds:
        size = max(1, min(size, math.floor(budget / run_seconds)))
    return size


def next_chunk_at(started: float, runs: int, rate: float) -> float:
    """When the chunk after one of ``runs`` runs begun at ``started`` may begin (the throttle)."""
    return started + runs / rate


def kept_errors(before: list[list[str]], new: tuple[tuple[str, str], ...]) -> list[list[str]]:
    """The latest :data:`KEPT_ERRORS` failures after a chunk's."""
    return [*before, *([r, e[:ERROR_CHARS]] for r, e in new)][-KEPT_ERRORS:]
