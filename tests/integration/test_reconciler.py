"""The reconciler finds expired leases through the index and gives up after the cap."""

from __future__ import annotations

import time
import uuid

from persistence import DynamoStore
from persistence.provision import create_tables
from workflows.core.background.sweeper import reconcile
from workflows.core.engine import Engine
from workflows.core.model.records import ResumeMessage, RunRecord
from workflows.core.storage.recovery import take_recovery
from workflows.memory import RecordingTransport
from workflows.settings import Settings


def resumes(transport: RecordingTransport) -> list[tuple[str, bool]]:
    return [(m.run_id, m.recovering) for m in transport.resumes]


def stored_run(settings: Settings) -> tuple[list[float], DynamoStore, RecordingTransport, Engine, str]:
    """A leased run on tables of its own (the fake clock must not touch other tests' runs), with an
    engine whose transport records what it sends."""
    clock = [time.time()]
    own = settings.with_(table_prefix=f"r{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    store = DynamoStore(own, clock=lambda: clock[0])
    transport = RecordingTransport()
    engine = Engine(store, transport, store.settings)
    run_id = str(uuid.uuid4())
    store.create_run(RunRecord(run_id=run_id, workflow="sequence", status="pending", created_at=clock[0],
                               args="[[1],{}]"))
    return clock, store, transport, engine, run_id


def test_expired_lease_is_recovered_then_capped(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A worker takes each recovery and dies with the run: the cap fails it."""
    clock, store, transport, engine, run_id = stored_run(settings.with_(max_recovery_attempts=2))
    assert reconcile(engine) == 0  # the lease has not expired yet
    for attempt in (1, 2):
        clock[0] += settings.lease_seconds * 3
        reconcile(engine)
        assert resumes(transport).count((run_id, True)) == attempt
        run = store.get_run(run_id)
        assert (run.recoveries, run.recovery_faults) == (attempt, attempt - 1)
        take_recovery(engine, run)  # a worker takes the resume, then dies with the run
    clock[0] += settings.lease_seconds * 3
    reconcile(engine)
    run = store.get_run(run_id)
    assert run.status == "failed" and "recovery attempts exhausted (2)" in (run.error or "")
    assert resumes(transport).count((run_id, True)) == 2
    assert run_id not in store.stale_runs(limit=10_000)  # an ended run leaves the lease index


def test_a_run_no_worker_takes_is_resent_uncounted_for_a_day(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No worker runs (an outage, a backlog): beat re-sends the recovery, never fails the run, and the
    re-sends back off to one an hour."""
    clock, store, transport, engine, run_id = stored_run(settings.with_(max_recovery_attempts=2, lease_seconds=300.0))
    began = clock[0]
    while clock[0] < began + 86_400:
        clock[0] += 300  # beat sweeps (every 5 minutes here, to keep the test short)
        reconcile(engine)
    run = store.get_run(run_id)
    sent = resumes(transport).count((run_id, True))
    assert run.status == "pending" and run.recovery_faults == 0 and run.recoveries == sent
    assert 20 <= sent <= 32  # 300 s, 600, 1,200, 2,400, then one an hour
    take_recovery(engine, run)  # the fleet is back: a worker takes one of the queued resumes
    assert store.get_run(run_id).recovery_pending == 0


class FailingTransport(RecordingTransport):
    def send_resume(self, message: ResumeMessage) -> None:
        raise ConnectionError("broker unreachable")


def test_start_whose_send_fails_is_stored_and_recovered(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.e2e import flows

    clock = [time.time()]
    own = settings.with_(table_prefix=f"r{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    store = DynamoStore(own, clock=lambda: clock[0])
    engine = Engine(store, FailingTransport(), store.settings)
    monkeypatch.setattr("workflows.client.get_engine", lambda settings=None: engine)
    handle = flows.sequence.start(3)  # the run is stored: start does not raise
    run = store.get_run(handle.run_id)
    assert run.status == "pending" and run.lease_expires_at is not None
    transport = engine.transport = RecordingTransport()
    clock[0] += settings.lease_seconds * 3
    reconcile(engine)
    assert resumes(transport) == [(handle.run_id, True)]
