"""Debounced starts, the run's side: a debounced run waits until its window closes, then runs
with the last arguments pushed into it (see docs/flow-control.md, "Debounce"; the starting
side is ``workflows.debounce``).

A window is the item of slot number 0 of limit ``debounce:<workflow>#<key>`` in the flow table: its holder
is the run the window collapses into, its expiry the window's end. A start within the window
replaces the run's arguments and pushes the end back, in one transaction conditional on the
window being open for that run. The run carries its key as the ``debounce`` tag. At its first
resume it is parked (suspended, with a ``wake`` timer at the window's end, one write) until the
end has passed; then it closes the window (a delete conditional on the holder) and reads itself
again: a push that landed before the close is in the arguments it runs with, one after it
finds the window closed and opens a new one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.records import RunRecord, TimerKind, TimerRecord

if TYPE_CHECKING:
    from ..engine import Engine

#: The tag a debounced run carries: its debounce key.
DEBOUNCE_TAG = "debounce"
#: The slot number (sort key) of a debounce window's item.
WINDOW_SLOT_NUMBER = 0


def window_of(workflow: str, key: str) -> str:
    """The flow-table limit id of the debounce windows of ``key`` for ``workflow``."""
    return f"debounce:{workflow}#{key}"


def hold_debounced(engine: Engine, run: RunRecord) -> bool | None:
    """Keep a debounced run from starting while its window is open.

    Returns True when the run may go on (not debounced, already started, or its window closed),
    False when it was parked until its window's end, None when it must be read again (it just
    closed its window, or it changed meanwhile).
    """
    key = (run.tags or {}).get(DEBOUNCE_TAG)
    if key is None or run.cursor != -1:
        return True
    window = window_of(run.workflow, key)
    mine = next((s for s in engine.store.slot_holders(window)
                 if s.number == WINDOW_SLOT_NUMBER and s.holder == run.run_id), None)
    if mine is None:  # closed by this run, or a start after its end opened the next window
        return True
    ends = mine.expires_at or 0.0
    if ends > engine.now():
        timer = TimerRecord(timer_id=f"{run.run_id}#debounce", kind=TimerKind.WAKE.value, run_id=run.run_id,
                            due_at=ends)
        return False if engine.store.defer_run(run.run_id, run.wake_seq, timer) else None
    engine.store.release_slot(window, WINDOW_SLOT_NUMBER, run.run_id)
    return None
