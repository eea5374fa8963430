"""Runs a worker cannot serve: leave them to a worker that can, without deciding their fate.

During a rolling deploy a worker may get a resume of a run whose workflow it does not
have (not yet deployed here, or removed), or of a code version it is configured not to
serve (``WORKFLOWS_SERVE_VERSIONS``). Neither is the workflow's doing (invariant 12): the
run is deferred, not failed. ``Store.defer_run`` suspends it with its op state kept and a
``wake`` timer in one transaction, so the run always has a due timer (invariant 10); when
the timer fires, beat wakes the run and a resume goes to the queue again, where a worker
that serves it takes it. No recovery is counted, so a long deploy never exhausts
``max_recovery_attempts``.

Deferrals in a row back off. The first ``FLAT_TRIES`` wait ``defer_seconds`` each: during a
rolling deploy a run may meet old workers several times in a row, and must not be held back
for it. Then each wait is twice the one before, up to ``defer_max_seconds``. A wait below
the cap is jittered down by up to 20%, so runs deferred together come back apart; at the cap
they stay as far apart as they got. The same write stores the run's :class:`Deferral` (why,
since when, how many tries, the next one) on the run item, which is how the run shows as
deferred (``runs show``, ``runs deferred``, the dashboard) at no extra request. See
docs/versioning.md.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..model.records import LIVE, RunRecord, TimerKind, TimerRecord
from .versions import serves

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger("workflows.engine")

#: Deferrals in a row that wait ``defer_seconds`` each before the waits double.
FLAT_TRIES = 10
#: A wait below the cap is its backoff times a factor drawn from this range; the cap is not jittered,
#: so a run at the cap is tried exactly once per ``defer_max_seconds``.
JITTER = (0.8, 1.0)


@dataclass(frozen=True)
class Deferral:
    """Why and since when a run waits for a worker that serves it (kept on the run item).

    Attributes:
        reason: which workflow or code version no worker that met the run serves.
        since: when the first deferral of this spell was written (epoch seconds).
        count: deferrals in this spell.
        next_at: when the run is tried again (its wake timer's due time).
        wake_seq: the run's ``wake_seq`` when deferred: the deferral is current while it is unchanged.
        cursor: the run's cursor when deferred: a spell goes on while the run makes no progress.
    """

    reason: str
    since: float
    count: int
    next_at: float
    wake_seq: int
    cursor: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON object stored on the run item."""
        return asdict(self)

    @classmethod
    def of(cls, run: RunRecord) -> Deferral | None:
        """The last deferral stored on ``run``, current or not (None if it has none, or unreadable)."""
        data = run.deferral
        if not isinstance(data, dict):
            return None
        try:
            return cls(str(data["reason"]), float(data["since"]), int(data["count"]), float(data["next_at"]),
                       int(data["wake_seq"]), int(data["cursor"]))
        except (KeyError, TypeError, ValueError):
            return None


def current_deferral(run: RunRecord) -> Deferral | None:
    """The deferral ``run`` sits in now: it is live and nothing woke it since it was deferred."""
    deferral = Deferral.of(run)
    if deferral is None or run.status not in LIVE or run.wake_seq != deferral.wake_seq:
        return None
    return deferral


def refusal(engine: Engine, run: RunRecord, known: bool) -> str | None:
    """Why this worker does not serve ``run`` (``known``: its workflow is registered here), or None."""
    if not known:
        return f"workflow {run.workflow!r} is not registered in this worker (is its module in WORKFLOWS_IMPORTS?)"
    if not serves(engine.settings, run):
        return (f"code version {run.code_version!r} is not among the versions this worker serves "
                f"({', '.join(engine.settings.serve_versions)})")
    return None


def backoff(engine: Engine, count: int) -> float:
    """Seconds before the ``count``-th deferral in a row is tried again (jittered, capped)."""
    settings = engine.settings
    cap = max(settings.defer_seconds, settings.defer_max_seconds)
    wait = settings.defer_seconds * 2.0 ** min(max(0, count - FLAT_TRIES), 64)
    return cap if wait >= cap else wait * random.uniform(*JITTER)


def next_deferral(engine: Engine, run: RunRecord, reason: str) -> Deferral:
    """The deferral to store now: the next of the run's spell (it was deferred, then woken once by
    its timer or a message, at the same cursor), or the first of a new one."""
    now, last = engine.now(), Deferral.of(run)
    going_on = last is not None and run.wake_seq == last.wake_seq + 1 and run.cursor == last.cursor
    since, count = (last.since, last.count + 1) if going_on and last is not None else (now, 1)
    return Deferral(reason, since, count, now + backoff(engine, count), run.wake_seq, run.cursor)


def defer_timer(run: RunRecord, due_at: float) -> TimerRecord:
    """The wake timer of a deferred run (one per run: deferring again replaces it)."""
    return TimerRecord(timer_id=f"{run.run_id}#defer", kind=TimerKind.WAKE.value, run_id=run.run_id, due_at=due_at)


def defer(engine: Engine, run: RunRecord, reason: str) -> bool:
    """Leave ``run`` to another worker; False if the run changed since it was read (replay again)."""
    deferral = next_deferral(engine, run, reason)
    if not engine.store.defer_run(run.run_id, run.wake_seq, defer_timer(run, deferral.next_at),
                                  deferral.to_dict()):
        return False
    log.warning("run %s deferred for %.0fs (try %d, deferred since %.0f): %s", run.run_id,
                deferral.next_at - engine.now(), deferral.count, deferral.since, reason)
    engine.observer.deferred(dataclasses.replace(run, deferral=deferral.to_dict()), reason)
    return True


def describe_deferral(deferral: Deferral, now: float) -> str:
    """One line for operators: why, since when, how many tries, when the next one is."""
    def at(ts: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))

    due = deferral.next_at - now
    return (f"{deferral.reason}; deferred since {at(deferral.since)}, {deferral.count} tr"
            f"{'y' if deferral.count == 1 else 'ies'}, next try {at(deferral.next_at)}"
            f" (in {max(0.0, due):.0f}s)")
