"""Recovery that waits for workers: what the reconciler's claim of an expired lease counts.

A lease can expire because a worker died with the run, or because the run's message waits in
a queue (a backlog, a lower priority, a paused pool, a fleet that is down). Only the first is a
fault. The run item tells them apart:

- ``recovery_pending``: resume messages the reconciler sent that no worker has taken yet. While
  it is set, a new expiry re-sends without counting, with a lease that doubles per re-send up to
  an hour (``resend_lease``): a fleet that is away for a day costs about 30 queued resumes a run.
- ``recovery_taken_at``: the cursor at which a worker last took a recovery's resume (the take
  removes ``recovery_pending``; ``take_recovery``).

A claim counts towards ``max_recovery_attempts`` only when a worker took the previous recovery
and the run has not moved on since (its cursor is where the take found it): a worker that takes
the run and dies with it, again and again, still fails it at the cap; a run that waits in a
queue, however long and however often, never does (invariant 16).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model.records import RunRecord

if TYPE_CHECKING:
    from ...settings import Settings
    from ..engine import Engine

log = logging.getLogger("workflows.recovery")

#: The longest lease a re-send waits before the next (unless the run lease itself is longer).
RESEND_LEASE_CAP = 3600.0


@dataclass(frozen=True)
class RecoveryClaim:
    """What a claim of ``seen`` (the run as read before it) writes.

    Attributes:
        counted: the claim counts towards the cap (a worker took the previous recovery and died
            with the run at the same cursor).
        pending: ``recovery_pending`` after the claim (re-sends no worker has taken).
        lease_seconds: the lease the claim sets, from now.
    """

    counted: bool
    pending: int
    lease_seconds: float


def recovery_claim(seen: RunRecord, settings: Settings) -> RecoveryClaim:
    """Decide what the reconciler's claim of the expired lease of ``seen`` counts and leases."""
    if seen.recovery_pending:  # the last recovery's message waits in a queue: re-send, count nothing
        return RecoveryClaim(False, seen.recovery_pending + 1, resend_lease(seen.recovery_pending, settings))
    counted = seen.recovery_taken_at is not None and seen.recovery_taken_at == seen.cursor
    return RecoveryClaim(counted, 1, settings.lease_seconds)


def resend_lease(resends: int, settings: Settings) -> float:
    """The lease of the ``resends``-th re-send in a row: the run lease doubled per re-send, at most an
    hour (or the run lease, if longer)."""
    cap = max(settings.lease_seconds, RESEND_LEASE_CAP)
    return min(cap, settings.lease_seconds * 2.0 ** min(resends, 32))


def exhausted(claimed: RunRecord, settings: Settings) -> bool:
    """Whether a claimed run has spent its recoveries: ``max_recovery_attempts`` counted claims."""
    return claimed.recovery_faults >= settings.max_recovery_attempts


def take_recovery(engine: Engine, run: RunRecord) -> None:
    """Note that a worker took the run while a recovery's resume was pending (``run`` as read), before
    anything of its replay can crash the worker: the next expiry at this cursor counts. A failed
    write is logged only: the run's next claim then re-sends without counting, which fails nothing."""
    if not run.recovery_pending or run.is_terminal:
        return
    try:
        engine.store.take_recovery(run)
    except Exception:  # noqa: BLE001 - the take is bookkeeping; the resume goes on
        log.warning("run %s: could not note the recovery taken", run.run_id, exc_info=True)
