"""Workflows of the priority tests: a run's level, a step's own level, a child that inherits."""

from __future__ import annotations

from workflows import parallel, sleep, step, workflow


@step(name="priority_work")
def work(n: int) -> int:
    return n + 1


@step(name="priority_urgent", priority="high")
def urgent(n: int) -> int:
    return n * 2


@step(name="priority_flaky", retries=2, retry_delay=1.0)
def flaky(n: int) -> int:
    flaky.calls = getattr(flaky, "calls", 0) + 1  # type: ignore[attr-defined]
    if flaky.calls == 1:  # type: ignore[attr-defined]
        raise ConnectionError("first attempt fails")
    return n


@workflow(name="priority_plain")
def plain(n: int) -> int:
    return work(n) + urgent(n)


@workflow(name="priority_declared_low", priority="low")
def declared_low(n: int) -> int:
    sleep("1m")
    return sum(parallel(work.s(n), urgent.s(n)))


@workflow(name="priority_parent")
def parent(n: int) -> int:
    return declared_low.start(n).result() + plain.start(n).result()


@workflow(name="priority_retrying")
def retrying(n: int) -> int:
    return flaky(n)
