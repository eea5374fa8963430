"""Workload of the first-of wait: a race of a signal, a timer and a step, under the simulator's faults.

``sim_race`` races the client's signal "go" against a timer and a step. Whichever the run saw first
wins, once: the step's or the timer's win is followed by a wait for the signal, which must still be
pending (or come later), so a signal is never lost to a race it did not win and never taken twice.
A replay after the sleep reads the recorded winner again; the result says what won. Kept apart from
the basic catalogue; this module adds it to ``CATALOGUE``.
"""

from __future__ import annotations

from typing import Any

from ..core.model.states import CandidateKind
from ..core.ops.calls import first_of, sleep, wait_for_signal
from ..core.ops.first import signal, timer
from ..decorators import workflow
from ..errors import WaitTimeout
from . import workloads as base
from .workloads import Workload, _ok, sim_add


@workflow
def sim_race(seconds: float) -> str:
    won = first_of(signal("go"), timer(seconds), sim_add.s(20, 700))
    sleep(1.0)  # the winner is read again on the replay after it
    if won.kind == CandidateKind.SIGNAL:
        return f"signal {won.value}"
    try:
        later = wait_for_signal("go", timeout=3600.0)
    except WaitTimeout:
        later = "timed out"
    return f"{won.kind} {won.value} then {later}"


def _ends(args: list[Any]) -> list[tuple[str, Any]]:
    return [end for first in ("signal go!", "step 720", "timer None")
            for end in (_ok(first) if first.startswith("signal") else
                        _ok(f"{first} then go!") + _ok(f"{first} then timed out"))]


RACES: list[Workload] = [
    Workload("sim_race", lambda r, k: [r.choice([0.0, 5.0, 60.0, 900.0])], _ends, needs="signal",
             act_after=30.0),
]
base.CATALOGUE += RACES
