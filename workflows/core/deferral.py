"""Runs a worker cannot serve: leave them to a worker that can, without deciding their fate.

During a rolling deploy a worker may get a resume of a run whose workflow it does not
have (not yet deployed here, or removed), or of a code version it is configured not to
serve (``WORKFLOWS_SERVE_VERSIONS``). Neither is the workflow's doing (invariant 12): the
run is deferred, not failed. ``Store.defer_run`` suspends it with its op state kept and a
``wake`` timer in one transaction, so the run always has a due timer (invariant 10); when
the timer fires, beat wakes the run and a resume goes to the queue again, where a worker
that serves it takes it. No recovery is counted, so a long deploy never exhausts
``max_recovery_attempts``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .records import RunRecord, TimerKind, TimerRecord
from .versions import serves

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("workflows.engine")


def refusal(engine: Engine, run: RunRecord, known: bool) -> str | None:
    """Why this worker does not serve ``run`` (``known``: its workflow is registered here), or None."""
    if not known:
        return f"workflow {run.workflow!r} is not registered in this worker (is its module in WORKFLOWS_IMPORTS?)"
    if not serves(engine.settings, run):
        return (f"code version {run.code_version!r} is not among the versions this worker serves "
                f"({', '.join(engine.settings.serve_versions)})")
    return None


def defer_timer(engine: Engine, run: RunRecord) -> TimerRecord:
    """The wake timer of a deferred run (one per run: deferring again replaces it)."""
    return TimerRecord(timer_id=f"{run.run_id}#defer", kind=TimerKind.WAKE.value, run_id=run.run_id,
                       due_at=engine.now() + engine.settings.defer_seconds)


def defer(engine: Engine, run: RunRecord, reason: str) -> bool:
    """Leave ``run`` to another worker; False if the run changed since it was read (replay again)."""
    if not engine.store.defer_run(run.run_id, run.wake_seq, defer_timer(engine, run)):
        return False
    log.warning("run %s deferred for %gs: %s", run.run_id, engine.settings.defer_seconds, reason)
    engine.observer.deferred(run, reason)
    return True
