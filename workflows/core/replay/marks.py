"""A sent step's outcome that dispatches the next op: its message leaves after one write.

The worker of a step message holds the step's outcome while it replays the run (``Engine.resume``'s
``held``). When the replay dispatches the next op as one step message, the outcome is written with
that op's waiting (``EventRecord.next_waiting``) in one conditional put: only the worker whose put
wins sends the message, and then moves the run item's cursor to the op (``Store.advance_run``,
after the send, off the message's path). Until the run item says so, a replay reads the mark from
the history (:func:`frontier`): the op after a marked record is in flight, so a wake or a duplicate
never sends it again, and a recovery re-sends it as it re-sends the op at a stored cursor.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.records import EventRecord, RunRecord
    from .commands import Dispatch
    from .history_cache import RunHistory


def frontier(run: RunRecord, history: RunHistory) -> RunRecord:
    """``run`` as its replay sees it: the cursor moved past every record at it that marked the next
    op in flight (the waiting is the marked op's)."""
    cursor, waiting = run.cursor, None
    while (event := history.outcomes.get(cursor)) is not None and event.next_waiting is not None:
        cursor, waiting = cursor + 1, event.next_waiting
    if waiting is None:
        return run
    return dataclasses.replace(run, cursor=cursor, waiting=waiting)


def marks(held: EventRecord, command: Dispatch) -> bool:
    """Whether the held outcome of a sent step carries ``command``'s dispatch: one step message
    (not a fan-out's branches) for the op right after it."""
    calls = command.calls
    return command.pos == held.pos + 1 and len(calls) == 1 and calls[0].branch is None


def marked(held: EventRecord, command: Dispatch) -> EventRecord:
    """The held outcome with the dispatched op's waiting."""
    return dataclasses.replace(held, next_waiting=command.waiting)
