"""Priority across real worker processes: with a backlog of low-priority steps queued for a
busy worker, a run started with ``priority="high"`` is served before the backlog drains."""

from __future__ import annotations

import signal
import uuid
from typing import Iterator

import pytest

from tests.e2e import priority_flows as flows
from tests.e2e.flow_limit_flows import spans
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

BACKLOG = 24


@pytest.fixture(scope="module")
def prio_worker(cluster, spawn, settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """A worker of 2 threads told to consume the step queue ``prioq`` only: it consumes its levels too."""
    worker = spawn("worker", "-Q", "prioq", "-c", "2")
    wait_for(lambda: "ready." in worker.output() or worker.popen.poll() is not None, 60, what="a worker is ready")
    assert worker.popen.poll() is None, worker.output()
    assert "prioq-high" in worker.output() and "prioq-low" in worker.output()  # celery lists what it consumes
    yield
    worker.kill(signal.SIGTERM)


def test_a_high_priority_run_finishes_before_a_low_priority_backlog_drains(prio_worker) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    low = [flows.prio_job.options(priority="low").start(tag, f"low-{i}") for i in range(BACKLOG)]
    wait_for(lambda: len(spans(tag)) >= 2, 60, poll=0.1, what="the backlog starts")
    high = flows.prio_job.options(priority="high").start(tag, "high")
    assert high.record().priority == "high"
    assert high.result(timeout=60) == "high"
    for run in low:
        assert run.result(timeout=120).startswith("low-")
    order = [label for what, _, label in sorted(spans(tag), key=lambda row: row[1]) if what == "S"]
    ahead = order.index("high")
    print(f"priority: the high step started after {ahead} of {BACKLOG} low steps")
    # In one FIFO queue it would start last; it waits only for the steps already taken (2 threads,
    # plus what the worker had fetched), far from the end of the backlog.
    assert ahead <= BACKLOG // 2, order
