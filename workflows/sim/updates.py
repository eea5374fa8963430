"""Workloads of updates (``core.replay.updates``): requests sent by the client, retried, and one after the end.

``sim_updates`` declares a handler and waits for a signal. The client sends update ``x`` (id ``a``),
update ``y`` (id ``b``), ``x`` again with id ``a`` (a retry, as after a client crash: a crash between
the store and the count repeats a send too), then the signal. Whatever the faults, each id is applied
once: the notes are ``["x", "y"]`` (or, if the wait timed out first, what was handled by then), and
the state invariant checks that no id has two update records in a run's history. ``sim_race_updates``
takes the same sends while a ``first_of`` race of the signal and a timer waits: the updates sent
before the signal are handled before the race returns it. ``sim_chain_updates`` takes them while a
chain of steps runs (in the seeds whose workers send every step, each step's outcome marks the next
one in flight: ``core.replay.marks``), then waits for the signal: no update takes a step's position.
``sim_update_late`` ends at once; the client sends an update well after: ``UpdateRunEnded``, nothing
stored.
Kept apart from the basic catalogue; this module adds them to ``CATALOGUE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.background.update_requests import send_update
from ..core.model.states import CandidateKind
from ..core.ops.calls import first_of, wait_for_signal
from ..core.ops.first import signal, timer
from ..core.replay.updates import on_update
from ..decorators import workflow
from ..errors import WaitTimeout
from . import workloads as base
from .workloads import Workload, _ok, sim_add

if TYPE_CHECKING:
    from ..core.engine import Engine

#: The client's sends, in order: (update id, payload), then the signal.
SENDS = (("a", "x"), ("b", "y"), ("a", "x"))


def taking_notes() -> list[str]:
    """Declare the ``note`` update handler (it appends the payload, answers the count); the notes."""
    notes: list[str] = []

    def note(value: str) -> int:
        notes.append(value)
        return len(notes)

    on_update("note", note)
    return notes


@workflow
def sim_updates() -> dict[str, Any]:
    notes = taking_notes()
    try:
        go = wait_for_signal("go", timeout=900)
    except WaitTimeout:
        go = "timed out"
    return {"notes": notes, "go": go}


@workflow
def sim_race_updates() -> dict[str, Any]:
    notes = taking_notes()
    won = first_of(signal("go"), timer(900.0))
    return {"notes": notes, "go": won.value if won.kind == CandidateKind.SIGNAL else "timed out"}


@workflow
def sim_chain_updates(n: int) -> dict[str, Any]:
    notes = taking_notes()
    total = 0
    for i in range(n):
        total = sim_add(total, i)
    try:
        go = wait_for_signal("go", timeout=900)
    except WaitTimeout:
        go = "timed out"
    return {"total": total, "notes": notes, "go": go}


@workflow
def sim_update_late() -> int:
    on_update("note", lambda value: value)
    return sim_add(1, 2)


def act(engine: Engine, instance: Any) -> None:
    """The client's action of an update workload (``instance.progress``: the sends done so far)."""
    from ..client import signal_run

    if instance.workload.needs == "late_update":
        send_update(engine, instance.run_id, "note", "late", "late")  # raises UpdateRunEnded
        return
    for update_id, payload in SENDS[instance.progress:]:
        send_update(engine, instance.run_id, "note", payload, update_id)
        instance.progress += 1
    signal_run(engine, instance.run_id, "go", "go!")


def _ends(args: list[Any]) -> list[tuple[str, Any]]:
    timed_out = [{"notes": notes, "go": "timed out"} for notes in ([], ["x"], ["x", "y"])]
    return _ok({"notes": ["x", "y"], "go": "go!"}) + [("completed", end) for end in timed_out]


def _chain_ends(args: list[Any]) -> list[tuple[str, Any]]:
    total = sum(range(args[0]))
    return [(status, {"total": total, **end}) for status, end in _ends(args)]


UPDATES: list[Workload] = [
    Workload("sim_updates", lambda r, k: [], _ends, needs="updates"),
    Workload("sim_race_updates", lambda r, k: [], _ends, needs="updates"),
    Workload("sim_update_late", lambda r, k: [], lambda a: _ok(3), needs="late_update", act_after=600.0),
    Workload("sim_chain_updates", lambda r, k: [r.randint(4, 10)], _chain_ends, needs="updates", act_after=-100.0),
]
base.CATALOGUE += UPDATES
