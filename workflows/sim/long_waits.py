"""Workloads that wait past the retention, and flow limits that deletion or timeouts may break.

Each outlives something the world deletes: a child's items (retention, 30 days), the first
runs of a chain that continues daily, payload objects (the bucket's lifecycle rule), or a
step's timeout (its body runs on). The world's checks (``keep``, ``watch``, ``check_exclusive``)
say what a live run lost. Kept apart from the basic catalogue (``workloads``), which imports
:data:`LONG_WAITS` (and this module adds them to its ``CATALOGUE``, whichever is imported first).
"""

from __future__ import annotations

import itertools
from typing import Any

from ..core.ops.calls import continue_as_new, parallel, sleep, wait_for_signal
from ..decorators import step, workflow
from . import workloads as base
from .workloads import Workload, _ok, _ran, sim_child_double

DAY = 86_400.0


@step
def sim_echo(blob: str) -> str:
    _ran("echo")
    return blob


@step
def sim_day() -> int:
    """The simulated day now (a step: replays read its recorded outcome)."""
    _ran("day")
    return int(base.observer.day())


@workflow
def sim_patient_parent(x: int, days: int) -> int:
    """Reads its child's result long after the child ended (past the child's retention)."""
    child = sim_child_double.start(x)
    sleep(days * DAY)
    return int(child.result()) + 1


@workflow
def sim_daily(days: int, total: int = 0) -> int:
    """Continues as new once a day for ``days`` days."""
    sleep(DAY)
    if days > 1:
        continue_as_new(days - 1, total + 1)
    return total + 1


@workflow
def sim_chain_parent(days: int) -> int:
    """Waits for a child chain that continues daily past the retention."""
    return int(sim_daily.start(days).result())


@workflow
def sim_signal_chain(taken: list[Any] | None = None) -> list[Any]:
    """Takes one signal per run of its chain: a signal pending at continue-as-new must reach the successor."""
    taken = [*(taken or []), wait_for_signal("item", timeout=30 * DAY)]
    if len(taken) < 2:
        continue_as_new(taken)
    return taken


@workflow
def sim_woken_early(blob: str, days: int) -> int:
    """Woken after 10 days from a wait with a year's timeout, then records a step and sleeps past its items'
    first expiry: the keep-alive pass must renew them by when they were written, not by the wait's deadline
    (a renewal counted from the deadline, a year away, would let TTL delete the step's record)."""
    wait_for_signal("go", timeout=365 * DAY)
    echoed = sim_echo(blob)
    sleep(days * DAY)
    return len(echoed)


@workflow
def sim_forkable(blob: str) -> int:
    """A run the client forks at op 1 about 29 days after it ended, when the source's objects are a day from
    their expiry: the fork, which sleeps 3 days more, must have its own copies."""
    echoed = sim_echo(blob)
    sleep(3 * DAY)
    return len(echoed)


@workflow
def sim_same_args_chain(blob: str, until_day: int) -> int:
    """Continues daily with the same arguments (after a read, nothing is written again) until ``until_day``."""
    sleep(DAY)
    if sim_day() < until_day:
        continue_as_new(blob, until_day)
    return len(blob)


@step(concurrency=1, concurrency_key="key", retries=1, retry_delay=2.0)
def sim_per_key(key: str, blob: str, branch: int) -> int:
    base.observer.entered(f"per-key-{key}")
    try:
        _ran(f"per-key-{key}-{branch}")
    finally:
        base.observer.left(f"per-key-{key}")
    return len(blob)


@workflow
def sim_per_key_batch(blob: str) -> list[int]:
    """A keyed limit whose arguments are payload objects: at most one attempt per key at once."""
    return list(parallel(sim_per_key.s("a", blob, 0), sim_per_key.s("b", blob, 1), sim_per_key.s("a", blob, 2)))


@step(concurrency=1, timeout=30.0, retries=1, retry_delay=2.0)
def sim_overrunning(i: int) -> int:
    base.observer.entered("overrun")
    try:
        _ran(f"overrun{i}")
    finally:
        base.observer.left("overrun")
    return i


@workflow
def sim_overrun_batch(n: int) -> list[Any]:
    """Steps under a limit whose bodies may outlive their timeout (the limit holds until a body returns)."""
    results = parallel(*(sim_overrunning.s(i) for i in range(n)), return_exceptions=True)
    return [r if isinstance(r, int) else "timed out" for r in results]


def _blob(r: Any, k: str) -> str:
    return f"{k}:" + "x" * r.randint(8, 3000)


def _either(n: int) -> list[tuple[str, Any]]:
    return [("completed", [i if ok else "timed out" for i, ok in enumerate(oks)])
            for oks in itertools.product((True, False), repeat=n)]


LONG_WAITS: list[Workload] = [
    Workload("sim_patient_parent", lambda r, k: [r.randint(1, 9), r.choice([35, 60])],
             lambda a: _ok(2 * a[0] + 1)),
    Workload("sim_chain_parent", lambda r, k: [r.randint(32, 40)], lambda a: _ok(a[0])),
    Workload("sim_daily", lambda r, k: [r.randint(36, 40)], lambda a: _ok(a[0]), needs="handle",
             act_after=33 * DAY),
    # A client that dies after a signal was stored (before it counted it) sends it again: signals carry no
    # idempotency key, so the chain may take "first" twice; a signal dropped at the continuation times out.
    # A restarted client has another clock skew: "second" must still come after "first" (seed 2102).
    Workload("sim_signal_chain", lambda r, k: [], lambda a: _ok(["first", "second"]) + _ok(["first", "first"]),
             needs="signals"),
    Workload("sim_forkable", lambda r, k: [_blob(r, k)], lambda a: _ok(len(a[0])), needs="fork",
             act_after=32 * DAY),
    Workload("sim_same_args_chain", lambda r, k: [_blob(r, k), r.randint(9, 12)], lambda a: _ok(len(a[0]))),
    Workload("sim_per_key_batch", lambda r, k: [_blob(r, k)], lambda a: _ok([len(a[0])] * 3)),
    Workload("sim_overrun_batch", lambda r, k: [r.randint(2, 3)], lambda a: _either(a[0])),
    Workload("sim_woken_early", lambda r, k: [_blob(r, k), r.randint(46, 60)], lambda a: _ok(len(a[0])),
             needs="signal", act_after=10 * DAY),  # after a keep-alive pass renewed it mid-wait (half a horizon)
]
base.CATALOGUE += LONG_WAITS
