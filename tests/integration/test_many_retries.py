"""A step may retry more than 998 times: attempts past 998 share the last attempt slot."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from tests.e2e import payload_flows
from workflows.core.engine import Engine
from workflows.core.execution.attempts import Attempt, schedule_retry
from workflows.core.model.records import OUTCOME_SUB, EventRecord, RunEnding, StepMessage, attempt_seq
from workflows.core.model.registry import get_step, get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.core.storage.timeline import run_history
from workflows.memory import RecordingTransport


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    own = settings.with_(table_prefix=f"mr{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    return own


class SpyStore(DynamoStore):
    """Remembers every history record written (the key of each write)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: list[EventRecord] = []

    def event_item(self, event: EventRecord) -> Any:
        self.written.append(event)
        return super().event_item(event)


def test_an_inline_step_retries_past_998_attempts_and_completes(own_settings) -> None:  # type: ignore[no-untyped-def]
    store = SpyStore(own_settings)
    engine = Engine(store, RecordingTransport(), store.settings)
    run_id, _ = engine.create_run(get_workflow(payload_flows.many_retries.name), "[[1000],{}]")
    # Fast-forward: attempts 1..995 failed (the next attempt number is the largest recorded one + 1).
    assert store.record_event(EventRecord(run_id=run_id, seq=attempt_seq(0, 995), kind="attempt", status="failed",
                                          at=1.0, name="fails_until", error="attempt 995 fails", attempt=995))
    for _ in range(20):
        run_worker_task(engine, lambda: engine.resume(run_id))
        if store.get_run(run_id).is_terminal:
            break
    run = store.get_run(run_id)
    assert (run.status, run.result, run.error) == ("completed", "1001", None)
    attempts = [e for e in store.written if e.kind == "attempt"]
    assert [e.attempt for e in attempts] == list(range(995, 1001))
    assert all(e.seq % 1000 != OUTCOME_SUB for e in attempts)
    history = run_history(store, run_id)
    assert [(e.seq, e.kind, e.attempt) for e in history[-2:]] == [(998, "attempt", 1000), (999, "step", 1001)]


def test_attempt_records_keep_the_latest_attempt(own_settings) -> None:  # type: ignore[no-untyped-def]
    store = DynamoStore(own_settings)
    engine = Engine(store, RecordingTransport(), store.settings)
    run_id, _ = engine.create_run(get_workflow(payload_flows.many_retries.name), "[[0],{}]")

    def attempt(n: int) -> EventRecord:
        return EventRecord(run_id=run_id, seq=attempt_seq(0, n), kind="attempt", status="failed", at=1.0,
                           name="fails_until", error=f"attempt {n}", attempt=n)

    assert store.record_attempt(attempt(3)) is True
    assert store.record_attempt(attempt(3)) is False  # a duplicate delivery
    assert store.record_attempt(attempt(998)) is True
    assert store.record_attempt(attempt(1000)) is True
    assert store.record_attempt(attempt(999)) is False  # late: never overwrites a later attempt
    assert store.record_attempt(attempt(1001)) is True
    assert [(e.seq, e.attempt) for e in run_history(store, run_id)] == [(3, 3), (998, 1001)]


def test_a_duplicate_attempt_failure_still_stores_its_retry_and_lease(own_settings) -> None:  # type: ignore[no-untyped-def]
    store = DynamoStore(own_settings)
    engine = Engine(store, RecordingTransport(), store.settings)
    run_id, _ = engine.create_run(get_workflow(payload_flows.many_retries.name), "[[0],{}]")
    step = get_step(payload_flows.fails_until.name)
    message = StepMessage(step.name, run_id, 0, 1, "[[0],{}]")

    def timer_id(attempt: int) -> str:  # the timer that sends this attempt
        return f"{run_id}#0#retry##{attempt}"

    def fail(n: int, backoff: float) -> None:
        schedule_retry(engine, message, step, Attempt("retry", error=f"attempt {n}", retry_in=backoff, attempt=n))

    fail(1000, backoff=0)
    # A late copy of attempt 999 fails: its record loses to the later attempt stored in the
    # shared slot, but its retry timer and the lease over its backoff still apply, beside
    # (never over) the retry of attempt 1001.
    fail(999, backoff=1000)
    assert store.claim_timer(timer_id(1001)) is True
    assert store.claim_timer(timer_id(1000)) is True
    assert store.get_run(run_id).lease_expires_at >= store.now() + 1000
    assert [(e.seq, e.attempt) for e in run_history(store, run_id)] == [(998, 1000)]
    store.finish_run(run_id, RunEnding("cancelled", error="cancelled"))
    fail(1001, backoff=0)  # the run has ended: neither a timer nor a record
    assert store.claim_timer(timer_id(1002)) is False
    assert [(e.seq, e.attempt) for e in run_history(store, run_id)] == [(998, 1000)]
