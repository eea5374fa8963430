"""Workloads of delayed starts and of children closed by their parent's end (issue 27, items 5 and 7).

``sim_delayed`` is started with a start time (``Workload.delay``): the client may cancel it before or
after that time (the world's random cancels), so it ends completed or cancelled, and no record of
its history may be written before its start time (beyond the processes' clock skew).
``sim_closing_parent`` starts one child of each kind, each asleep for a day, and ends a moment later:
its end closes the ``cancel`` and ``request_cancel`` children, leaves the ``abandon`` and default
ones (cancelled with it only if it is cancelled) and the detached one (never linked) to complete.
Kept apart from the basic catalogue; this module adds them to ``CATALOGUE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.model.records import TERMINAL, RunStatus
from ..core.model.states import OpKind
from ..core.ops.calls import sleep
from ..decorators import workflow
from . import workloads as base
from .invariants import _history, _run
from .workloads import Workload, _ok, sim_add

if TYPE_CHECKING:
    from .world import Instance, World

DAY = 86_400.0
#: The children of ``sim_closing_parent`` by start position: (how it is started, how it must end when
#: its parent completed; a cancelled parent cancels the default one too).
KINDS = (("cancel", "cancelled"), ("request_cancel", "cancelled"), ("abandon", "completed"),
         ("detached", "completed"), (None, "completed"))


@workflow
def sim_delayed(n: int, delay: float) -> int:
    """Started ``delay`` seconds late (the client passes its start time)."""
    return sim_add(n, 700)


@workflow
def sim_sleeping_child(x: int) -> int:
    sleep(DAY)
    return sim_add(x, 800)


@workflow
def sim_closing_parent() -> str:
    for how, _ in KINDS:
        options = {"detached": True} if how == "detached" else {"parent_close_policy": how}
        sim_sleeping_child.options(**options).start(1)
    sleep(10.0)
    return "closed"


def check_never_early(world: World, instance: Instance) -> None:
    """No record of a delayed run's history was written before its start time."""
    run = _run(world, instance.run_id)
    if run is None or run.get("start_at") is None:
        return
    early = [e["seq"] for e in _history(world, instance.run_id)
             if e.get("at") is not None and e["at"] < run["start_at"] - 2 * world.faults.skew - 0.01]
    if early and any(e.get("kind") != OpKind.END for e in _history(world, instance.run_id) if e["seq"] in early):
        world.violations.append(f"run {instance.run_id} wrote history records {early[:4]} before its start "
                                f"time {run['start_at']:.1f}")


def check_closed_children(world: World, instance: Instance) -> None:
    """Each child of a ``sim_closing_parent`` run ended as its link and its parent's end say."""
    parent = _run(world, instance.run_id)
    if parent is None or parent["status"] not in TERMINAL:
        return
    cancelled = parent["status"] == RunStatus.CANCELLED
    for pos, (how, ends) in enumerate(KINDS):
        child = _run(world, f"{instance.run_id}.{pos}")
        if child is None:
            if not cancelled:  # only a cancel before its start leaves a child unstarted
                world.violations.append(f"child {pos} ({how}) of run {instance.run_id} was never started")
            continue
        linked = child.get("parent_run_id") == instance.run_id
        if linked == (how == "detached"):
            world.violations.append(f"child {pos} ({how}) of run {instance.run_id} is {'' if linked else 'not '}"
                                    "linked to it")
        expected = "cancelled" if how is None and cancelled else ends
        if child["status"] == expected:
            continue
        history = _history(world, instance.run_id)
        known = any(e["seq"] == pos * 1000 + 999 and e["kind"] == OpKind.CHILD for e in history)
        if cancelled and not known:
            continue  # cancelled between the child's creation and its start's record: it does not know it
        before = child.get("ended_at") is not None and child["ended_at"] <= (parent.get("ended_at") or 0)
        if cancelled and expected == "completed" or before and child["status"] == RunStatus.COMPLETED:
            continue  # a parent cancelled while starting it may not know it; it may have ended before its parent
        world.violations.append(f"child {pos} ({how}) of run {instance.run_id} ended {child['status']}, expected "
                                f"{expected} (its parent ended {parent['status']})")


STARTS: list[Workload] = [
    Workload("sim_delayed", lambda r, k: [r.randint(1, 9), r.choice([30.0, 400.0, DAY])], lambda a: _ok(a[0] + 700),
             delay=lambda a: float(a[1]), check=check_never_early),
    Workload("sim_closing_parent", lambda r, k: [], lambda a: _ok("closed"), check=check_closed_children),
]
base.CATALOGUE += STARTS
