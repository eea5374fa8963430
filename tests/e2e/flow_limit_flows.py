"""Workflows of the flow-control end-to-end tests: every limited step logs its start and end
(wall time) to a file shared by the worker processes."""

from __future__ import annotations

import os
import time

from tests.e2e.flows import bump, counter_dir
from workflows import parallel, step, workflow


def note(tag: str, what: str, label: str) -> None:
    """Append one line ``<S|E> <time> <label>`` (one small O_APPEND write: atomic)."""
    counter_dir().mkdir(parents=True, exist_ok=True)
    fd = os.open(counter_dir() / f"{tag}.flow", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, f"{what} {time.time():.6f} {label}\n".encode())
    finally:
        os.close(fd)


def spans(tag: str) -> list[tuple[str, float, str]]:
    """Every logged (S or E, time, label) of ``tag``."""
    path = counter_dir() / f"{tag}.flow"
    if not path.exists():
        return []
    rows = [line.split(" ", 2) for line in path.read_text().splitlines() if line]
    return [(what, float(at), label) for what, at, label in rows]


@step(concurrency=2, queue="flowlimits", retries=0)
def flow_gpu(tag: str, i: int) -> int:
    note(tag, "S", "gpu")
    time.sleep(0.4)
    note(tag, "E", "gpu")
    return i


@step(concurrency=1, concurrency_key="customer", queue="flowlimits", retries=0)
def flow_customer(tag: str, customer: str, i: int) -> str:
    note(tag, "S", customer)
    time.sleep(0.3)
    note(tag, "E", customer)
    return f"{customer}:{i}"


@step(rate="20/s", queue="flowlimits", retries=0)
def flow_rated(tag: str, i: int) -> int:
    note(tag, "S", "rate")
    return i


@step(concurrency=1, queue="flowcrash", retries=0)
def flow_exclusive(tag: str, name: str) -> str:
    note(tag, "S", name)
    if bump(f"{tag}-exclusive") == 1:
        time.sleep(60)  # the first execution holds the slot until its worker is killed
    note(tag, "E", name)
    return name


@workflow
def flow_gpu_batch(tag: str, n: int) -> list[int]:
    return parallel(*(flow_gpu.s(tag, i) for i in range(n)))


@workflow
def flow_customers(tag: str, customers: int, each: int) -> list[str]:
    return parallel(*(flow_customer.s(tag, f"{tag}-c{c}", i) for i in range(each) for c in range(customers)))


@workflow
def flow_rated_batch(tag: str, n: int) -> int:
    return len(parallel(*(flow_rated.s(tag, i) for i in range(n))))


@workflow
def flow_exclusive_job(tag: str, name: str) -> str:
    return flow_exclusive(tag, name)


def overrun(tag: str) -> None:
    """A body that runs past its attempt's timeout (1 s against 0.3 s)."""
    note(tag, "S", "overrun")
    time.sleep(1.0)
    note(tag, "E", "overrun")


@step(concurrency=1, timeout=0.3, retries=3, retry_delay=0.05, queue="flowlimits")
def flow_overrunning(tag: str) -> None:
    overrun(tag)


@step(concurrency=1, timeout=0.3, retries=3, retry_delay=0.05, queue="flowprefork")
def flow_overrunning_prefork(tag: str) -> None:
    overrun(tag)


@workflow
def flow_overrun_job(tag: str, prefork: bool) -> None:
    (flow_overrunning_prefork if prefork else flow_overrunning)(tag)
