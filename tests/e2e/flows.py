"""Workflows used by the end-to-end tests; workers import this module by name."""

from __future__ import annotations

import os
import time
from pathlib import Path

from workflows import (
    FatalError,
    RetryableError,
    WaitTimeout,
    continue_as_new,
    parallel,
    set_tags,
    sleep,
    step,
    wait_for_signal,
    workflow,
)


def counter_dir() -> Path:
    """Where executions are counted (set by the test session for every process)."""
    return Path(os.environ["WORKFLOWS_TEST_COUNTERS"])


def bump(name: str) -> int:
    """Count an execution in a file (visible across worker processes)."""
    counter_dir().mkdir(parents=True, exist_ok=True)
    path = counter_dir() / name
    with path.open("a") as f:
        f.write("x")
    return path.stat().st_size


def executions(name: str) -> int:
    path = counter_dir() / name
    return path.stat().st_size if path.exists() else 0


@step
def add(a: int, b: int) -> int:
    return a + b


@step
def record(tag: str) -> int:
    return bump(tag)


@step(retries=3, retry_delay=0.2, backoff=1.0)
def flaky(tag: str, failures: int) -> str:
    if bump(tag) <= failures:
        raise RuntimeError(f"transient failure of {tag}")
    return f"ok after {failures}"


@step(retries=5)
def fatal(tag: str) -> str:
    bump(tag)
    raise FatalError("card declined")


@step(retries=1, retry_delay=0.1, timeout=0.5)
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "done"


@step(retries=0, queue="crashy")
def slow_once(tag: str, seconds: float) -> str:
    bump(tag)
    time.sleep(seconds)
    return "slept"


@step(retries=2)
def retry_after(tag: str) -> float:
    if bump(tag) == 1:
        raise RetryableError("come back later", retry_after=0.3)
    return time.time()


@step(inline=True)
def inline_add(a: int, b: int) -> int:
    return a + b


@workflow
def sequence(n: int) -> int:
    total = 0
    for i in range(n):
        total = add(total, i)
    return total


@workflow
def inline_sequence(n: int) -> int:
    total = 0
    for i in range(n):
        total = inline_add(total, i)
    return total


@workflow
def twice(tag: str) -> list[int]:
    return [record(tag), record(tag)]


@workflow
def recorded_pair(tag: str) -> list[int]:
    """Two steps, each counting its own executions (``<tag>-1``, ``<tag>-2``)."""
    return [record(f"{tag}-1"), record(f"{tag}-2")]


@workflow
def retrying(tag: str) -> str:
    return flaky(tag, 2)


@workflow
def failing(tag: str) -> str:
    return fatal(tag)


@workflow
def timing_out() -> str:
    return slow(3.0)


@workflow(max_duration=1.5)
def too_long() -> str:
    sleep(30)
    return "never"


@step
def now() -> float:
    return time.time()


@workflow
def sleeper(seconds: float) -> dict:
    before = now()  # workflow code is replayed: clocks are read in steps
    sleep(seconds)
    return {"slept_from": before, "woke_at": now()}


@workflow
def long_step(tag: str, seconds: float) -> str:
    return slow_once(tag, seconds)


@step(queue="crashy")
def worker_pid() -> int:
    return os.getpid()


@workflow
def quick_then_long_step(tag: str, seconds: float) -> dict:
    slow_once(tag + "-first", 0.0)
    slept = slow_once(tag, seconds)  # runs in place, in the task of the first step
    return {"slept": slept, "pid": worker_pid()}  # the process that ran the last step


@workflow
def fan_out(n: int) -> list[int]:
    return parallel(*(add.s(i, i) for i in range(n)))


@workflow
def nondeterministic(tag: str) -> int:
    if executions(tag + "-flip") == 0:
        bump(tag + "-flip")
        add(1, 1)
        sleep(0.5)
        return 0
    record(tag)  # a different step at position 0 on replay
    return 1


@step(queue="dup")
def slow_branch(tag: str, i: int, seconds: float) -> int:
    bump(tag)
    time.sleep(seconds)
    return i * i


@workflow
def duplicated_fan_out(tag: str, n: int, seconds: float) -> list[int]:
    squares = parallel(*(slow_branch.s(tag, i, seconds) for i in range(n)))
    record(tag + "-after")  # runs once per resume of the parent past the join
    return squares


@step(retries=0)
def boom(i: int) -> int:
    if i == 2:
        raise ValueError("branch two is broken")
    return i


@workflow
def failing_fan_out(return_exceptions: bool) -> list:
    results = parallel(*(boom.s(i) for i in range(4)), return_exceptions=return_exceptions)
    return [r if isinstance(r, int) else f"error: {r}" for r in results]


@workflow
def signal_collector(n: int) -> list:
    now()  # a step first, so signals can arrive before the wait
    return [wait_for_signal("item", timeout="30s") for _ in range(n)]


@workflow
def signal_or_timeout(seconds: float) -> str:
    try:
        return wait_for_signal("never", timeout=seconds)
    except WaitTimeout:
        return "timed out"


@workflow
def child_double(x: int) -> int:
    return add(x, x)


@workflow
def parent_of_children(n: int) -> list[int]:
    children = [child_double.start(i) for i in range(n)]
    return [child.result() for child in children]


@workflow
def parent_of_sleeper(seconds: float) -> dict:
    return sleeper.start(seconds).result()


@workflow
def counter(value: int, remaining: int) -> int:
    value = add(value, 1)
    if remaining > 0:
        continue_as_new(value, remaining - 1)
    return value


@workflow
def tagged_order(order_id: str) -> int:
    """Tags set from inside a workflow, around a step a worker runs (tests/e2e/test_tags_retention.py)."""
    set_tags(stage="started", order=order_id)
    total = add(2, 3)
    parallel(add.s(1, 1), add.s(2, 2))  # a fan-out: its join's items expire with the run too
    set_tags(stage="done", total=str(total))
    return total


@workflow
def signal_chain(taken: list) -> list:
    """Take one signal per run of a continue-as-new chain, until two are taken (tests/e2e/test_composition.py)."""
    taken = [*taken, wait_for_signal("item", timeout="60s")]
    if len(taken) < 2:
        continue_as_new(taken)
    return taken


@workflow
def parent_of_chain(remaining: int) -> int:
    """Wait for a child that continues as new: its last run writes its end into this run's history."""
    return int(counter.start(0, remaining).result())
