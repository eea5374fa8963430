"""The engine end to end on real worker and beat processes."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e import flows
from tests.waiting import wait_for
from workflows import RunCancelled, RunFailed, RunStatus, RunTimedOut, cancel, get_run, start
from workflows.errors import PayloadTooLarge, SerializationError, UnknownWorkflow

pytestmark = pytest.mark.e2e


def tag() -> str:
    return uuid.uuid4().hex[:10]


def test_two_identical_calls_both_run(cluster) -> None:
    t = tag()
    run = flows.twice.start(t)
    assert run.result(timeout=60) == [1, 2]
    assert flows.executions(t) == 2


def test_retries_then_success_records_every_attempt(cluster) -> None:
    t = tag()
    run = flows.retrying.start(t)
    assert run.result(timeout=60) == "ok after 2"
    assert flows.executions(t) == 3
    (row,) = run.steps()
    assert row["status"] == "completed" and row["attempts"] == 3
    attempts = [e for e in run.history() if e.kind == "attempt"]
    assert [e.attempt for e in attempts] == [1, 2]
    assert all("transient failure" in (e.error or "") for e in attempts)


def test_fatal_error_fails_without_retry(cluster) -> None:
    t = tag()
    run = flows.failing.start(t)
    with pytest.raises(RunFailed) as info:
        run.result(timeout=60)
    assert "card declined" in str(info.value)
    assert flows.executions(t) == 1
    assert run.status() == RunStatus.FAILED


def test_step_timeout_is_enforced_and_retried(cluster) -> None:
    run = flows.timing_out.start()
    with pytest.raises(RunFailed) as info:
        run.result(timeout=60)
    assert "StepTimeout" in str(info.value)
    (row,) = run.steps()
    assert row["attempts"] == 2  # retries=1


def test_max_duration_times_the_run_out(cluster) -> None:
    run = flows.too_long.start()
    started = time.time()
    with pytest.raises(RunTimedOut):
        run.result(timeout=30)
    assert time.time() - started < 15
    assert run.status() == RunStatus.TIMED_OUT


def test_durable_sleep_never_ends_early(cluster) -> None:
    run = flows.sleeper.start(2.5)
    result = run.result(timeout=60)
    slept = result["woke_at"] - result["slept_from"]
    assert slept >= 2.5, slept
    assert slept < 10, slept
    assert any(e.kind == "sleep" and e.status == "fired" for e in run.history())


def test_fractional_sleep_is_kept(cluster) -> None:
    run = flows.sleeper.start(1.3)
    result = run.result(timeout=60)
    assert result["woke_at"] - result["slept_from"] >= 1.3


def test_cancel_during_sleep(cluster) -> None:
    run = flows.sleeper.start(60)
    wait_for(lambda: run.status() == RunStatus.SUSPENDED, 30, poll=0.1, what="the run sleeps")
    cancel(run.run_id)
    with pytest.raises(RunCancelled):
        run.result(timeout=30)
    assert run.status() == RunStatus.CANCELLED


def test_idempotency_under_ten_concurrent_starts(cluster) -> None:
    key = f"order-{tag()}"
    barrier = threading.Barrier(10)

    def go(_: int) -> str:
        barrier.wait()
        return flows.sequence.options(idempotency_key=key).start(3).run_id

    with ThreadPoolExecutor(10) as pool:
        ids = set(pool.map(go, range(10)))
    assert len(ids) == 1
    assert get_run(ids.pop()).result(timeout=60) == 3


def test_start_by_name_and_bad_input(cluster) -> None:
    assert start("sequence", 4).result(timeout=60) == 6
    with pytest.raises(UnknownWorkflow):
        start("no-such-workflow")
    with pytest.raises(SerializationError):
        flows.sequence.start(object())
    with pytest.raises(PayloadTooLarge):
        flows.sequence.start("x" * 300_000)


def test_non_determinism_fails_the_run_naming_the_position(cluster) -> None:
    t = tag()
    run = flows.nondeterministic.start(t)
    with pytest.raises(RunFailed) as info:
        run.result(timeout=60)
    message = str(info.value)
    assert "NonDeterminismError" in message and "position 0" in message
    assert "step add" in message and "step record" in message


def test_inline_steps_need_no_broker_hop(cluster) -> None:
    run = flows.inline_sequence.start(6)
    assert run.result(timeout=60) == 15
    assert len(run.steps()) == 6


def test_fan_out_results_in_order(cluster) -> None:
    run = flows.fan_out.start(20)
    assert run.result(timeout=90) == [2 * i for i in range(20)]
