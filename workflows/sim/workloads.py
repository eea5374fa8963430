"""The simulator's workload catalogue: one workflow per op kind, with the ends it may reach.

Steps count their executions through :data:`observer` (set by the simulator), keyed by
(run, op position, attempt, label), so the invariants can tell a repeated execution.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from typing import Any, Callable

from ..core.ops.calls import continue_as_new, hook, parallel, set_event, set_tags, sleep, wait_for_signal, write_stream
from ..core.ops.steps import current_step
from ..decorators import step, workflow
from ..errors import StepFailed, WaitTimeout


class Observer:
    """What the workloads report to the simulator (no-op until a world installs itself)."""

    def executed(self, label: str) -> None:
        """A step body ran."""

    def published(self, key: str, token: str) -> None:
        """A workflow handed out a hook token."""

    def entered(self, label: str) -> None:
        """A step limited to one attempt at a time began its body."""

    def left(self, label: str) -> None:
        """That body ended."""

    def gated(self, run_id: str) -> None:
        """A step of a run of the ``concurrency=1`` workflow began its body."""

    def day(self) -> float:
        """Simulated days since the scenario began."""
        return 0.0


observer: Observer = Observer()


def _ran(label: str) -> int:
    info = current_step()
    observer.executed(label)
    return info.attempt if info is not None else 1


@step
def sim_add(a: int, b: int) -> int:
    _ran(f"add{b}")
    return a + b


@step(inline=True)
def sim_add_inline(a: int, b: int) -> int:
    _ran(f"inline{b}")
    return a + b


@step(retries=3, retry_delay=5.0, backoff=1.0)
def sim_flaky(failures: int) -> str:
    if _ran("flaky") <= failures:
        raise RuntimeError("flaky step failed")
    return "recovered"


@step(retries=2, retry_delay=3.0, backoff=1.0, inline=True)
def sim_flaky_inline(failures: int) -> str:
    if _ran("flaky_inline") <= failures:
        raise RuntimeError("flaky inline step failed")
    return "recovered"


@step(retries=0)
def sim_fail(i: int) -> int:
    _ran(f"fail{i}")
    raise RuntimeError(f"branch {i} failed")


@step
def sim_publish(key: str, token: str) -> None:
    _ran("publish")
    observer.published(key, token)


@step(concurrency=1, retries=1, retry_delay=2.0)
def sim_exclusive(i: int) -> int:
    observer.entered("exclusive")
    try:
        _ran(f"exclusive{i}")
    finally:
        observer.left("exclusive")
    return i


@workflow
def sim_exclusive_batch(n: int) -> list[int]:
    return parallel(*(sim_exclusive.s(i) for i in range(n))) + [sim_exclusive(n)]


@step(concurrency=1, concurrency_key="customer", rate="5/s", rate_key="customer", retries=1, retry_delay=2.0)
def sim_keyed(customer: str, document: str) -> int:
    # The world's payload threshold is 4 bytes: the arguments travel as a reference to the blob
    # store, and the limit keys are read from the arguments it stands for (issue 23, item 3).
    _ran(f"keyed-{customer}-{len(document)}")
    return len(document)


@workflow
def sim_keyed_batch(n: int) -> list[int]:
    return parallel(*(sim_keyed.s(f"c{i % 2}", "d" * (10 + i)) for i in range(n)))


@step
def sim_gated(i: int) -> int:
    info = current_step()
    observer.gated(info.run_id if info is not None else "")
    _ran(f"gated{i}")
    return i


@workflow(concurrency=1)
def sim_one_at_a_time(n: int) -> int:
    first = sim_gated(n)
    sleep(120.0)  # long enough that runs started together overlap without the limit
    return sim_gated(first)


@workflow
def sim_gated_batch(n: int) -> list[int]:
    children = [sim_one_at_a_time.start(i) for i in range(n)]  # they contend for its one slot
    return [int(child.result()) for child in children]


@workflow
def sim_steps(n: int) -> int:
    total = 0
    for i in range(n):
        total = sim_add(total, i)
    return total


@workflow
def sim_inline(n: int) -> int:
    total = 0
    for i in range(n):
        total = sim_add_inline(total, i)
    return total


@workflow
def sim_retries() -> list[str]:
    try:
        second = sim_flaky(9)  # fails more often than it retries
    except StepFailed:
        second = "gave up"
    return [sim_flaky(2), sim_flaky_inline(1), second]


@workflow
def sim_sleep(seconds: float) -> int:
    sleep(seconds)
    return sim_add(1, 1)


@workflow
def sim_hook(key: str) -> Any:
    approval = hook("approve", timeout=900)
    sim_publish(key, approval.token)
    try:
        return approval.wait()
    except WaitTimeout:
        return "timed out"


@workflow
def sim_signal() -> Any:
    try:
        return wait_for_signal("go", timeout=900)
    except WaitTimeout:
        return "timed out"


@workflow
def sim_child_double(x: int) -> int:
    return sim_add(x, x)


@workflow
def sim_parent(x: int) -> int:
    return int(sim_child_double.start(x).result()) + 1


@workflow
def sim_fan_out(n: int) -> list[Any]:
    calls = [sim_add.s(i, 100 + i) for i in range(n)] + [sim_fail.s(0)]
    results = parallel(*calls, return_exceptions=True)
    return [r if isinstance(r, int) else "failed" for r in results]


@workflow
def sim_fail_fast(n: int) -> str:
    try:
        parallel(*[sim_add.s(i, 200 + i) for i in range(n)], sim_fail.s(1))
    except Exception as exc:  # the workflow's own handling of a failed branch
        return type(exc).__name__
    return "no failure"


@workflow
def sim_continue(n: int) -> str:
    set_tags(left=str(n), chain=None if n % 2 else "even")  # a successor starts with the tags its run ended with
    total = sim_add(n, 0)
    if n > 0:
        continue_as_new(n - 1)
    return f"done at {total}"


@workflow
def sim_signal_to_chain(n: int) -> Any:
    """Continue as new ``n`` times, then wait for a signal sent to the chain's first run id (it may
    race a continuation: it must reach the chain's current run)."""
    if n > 0:
        sim_add(n, 0)
        continue_as_new(n - 1)
    try:
        return wait_for_signal("go", timeout=900)
    except WaitTimeout:
        return "timed out"


@workflow
def sim_parent_of_chain(n: int) -> str:
    """Wait for a child that continues as new: its chain's last run writes its end into this run."""
    return str(sim_continue.start(n).result())


@step
async def sim_async_add(a: int, b: int) -> int:
    # Runs on the step loop's thread: no simulated step time (the baton sees no actor there).
    _ran(f"async_add{b}")
    return a + b


@workflow
async def sim_async(n: int) -> int:
    total = await sim_async_add(0, 1)
    total = sim_add(total, 2)  # a sync step in an async workflow
    await sleep(1.0)
    parts = await asyncio.gather(*(sim_async_add(i, 400 + i) for i in range(n)))
    return total + sum(parts)


@workflow
def sim_events(n: int) -> list[int]:
    """Publish events and a progress stream between steps and a sleep (each recorded once)."""
    set_event("stage", "started")
    offsets = []
    for i in range(n):
        total = sim_add(i, 500 + i)
        offsets.append(write_stream({"part": i, "total": total}))
        set_event("stage", f"part {i}")
    sleep(5.0)
    offsets.append(write_stream("end"))
    set_event("stage", "done")
    return offsets


@dataclasses.dataclass(frozen=True)
class Workload:
    """A workflow, how to start it, and the ends its runs may reach."""

    name: str
    make_args: Callable[[random.Random, str], list[Any]]
    ends: Callable[[list[Any]], list[tuple[str, Any]]]
    # "hook", "signal", "signals", "handle", "fork", "events", "updates" or "late_update": the client has to act
    needs: str | None = None
    act_after: float = 0.0  # the client acts this long (simulated seconds) after the scenario began, or later
    delay: Callable[[list[Any]], float] | None = None  # start the run this long after the client asks (its args)
    check: Callable[[Any, Any], None] | None = None  # a check of its own at the end: (world, instance)


def _ok(value: Any) -> list[tuple[str, Any]]:
    return [("completed", value)]


CATALOGUE = [
    Workload("sim_steps", lambda r, k: [r.randint(1, 4)], lambda a: _ok(sum(range(a[0])))),
    Workload("sim_inline", lambda r, k: [r.randint(1, 30)], lambda a: _ok(sum(range(a[0])))),  # longer than a lease
    Workload("sim_retries", lambda r, k: [], lambda a: _ok(["recovered", "recovered", "gave up"])),
    Workload("sim_sleep", lambda r, k: [r.choice([1.0, 30.0, 700.0])], lambda a: _ok(2)),
    Workload("sim_hook", lambda r, k: [k], lambda a: _ok({"approved": a[0]}) + _ok("timed out"), needs="hook"),
    Workload("sim_signal", lambda r, k: [], lambda a: _ok("go!") + _ok("timed out"), needs="signal"),
    Workload("sim_parent", lambda r, k: [r.randint(1, 9)], lambda a: _ok(2 * a[0] + 1)),
    Workload("sim_fan_out", lambda r, k: [r.randint(1, 3)],
             lambda a: _ok([100 + 2 * i for i in range(a[0])] + ["failed"])),
    Workload("sim_fail_fast", lambda r, k: [r.randint(0, 2)], lambda a: _ok("ParallelError")),
    Workload("sim_continue", lambda r, k: [r.randint(0, 2)], lambda a: _ok("done at 0")),
    Workload("sim_signal_to_chain", lambda r, k: [r.randint(0, 3)], lambda a: _ok("go!") + _ok("timed out"),
             needs="signal"),
    Workload("sim_parent_of_chain", lambda r, k: [r.randint(0, 2)], lambda a: _ok("done at 0")),
    Workload("sim_async", lambda r, k: [r.randint(1, 3)], lambda a: _ok(3 + sum(400 + 2 * i for i in range(a[0])))),
    Workload("sim_exclusive_batch", lambda r, k: [r.randint(1, 3)], lambda a: _ok(list(range(a[0] + 1)))),
    Workload("sim_one_at_a_time", lambda r, k: [r.randint(1, 3)], lambda a: _ok(a[0])),
    Workload("sim_gated_batch", lambda r, k: [r.randint(2, 3)], lambda a: _ok(list(range(a[0])))),
    Workload("sim_keyed_batch", lambda r, k: [r.randint(1, 4)], lambda a: _ok([10 + i for i in range(a[0])])),
    Workload("sim_events", lambda r, k: [r.randint(1, 3)], lambda a: _ok(list(range(a[0] + 1))), needs="events",
             act_after=-300.0),  # the client reads its events and stream at a time drawn from its first 100 s
]


# -- waits past the retention, limits under deletion and timeouts; deterministic helpers and completion
# criteria (modules of their own, which build on the definitions above and add to CATALOGUE)
from . import determinism, long_waits, races, starts, updates  # noqa: E402,F401
