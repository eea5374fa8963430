"""A first resume message carrying its run: the stored run decides, never the message."""

from __future__ import annotations

import dataclasses
import time
import uuid

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from tests.e2e import flows
from workflows.celery.transport import fresh_run
from workflows.core.engine import Engine
from workflows.core.model.records import ResumeMessage, RunRecord
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.memory import RecordingTransport


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    own = settings.with_(table_prefix=f"fr{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    return own


def engine_of(own_settings) -> Engine:  # type: ignore[no-untyped-def]
    store = DynamoStore(own_settings)
    return Engine(store, RecordingTransport({None}), store.settings)


def deliver_first(engine: Engine, run: RunRecord) -> None:
    """The resume task's body for the first delivery of a message carrying ``run`` (as on the wire)."""
    wire = {k: v for k, v in dataclasses.asdict(run).items() if v is not None}
    message = ResumeMessage(run.run_id, fresh=fresh_run(run.run_id, wire))
    assert message.fresh is not None
    run_worker_task(engine, lambda: engine.receive_resume(message, first_delivery=True))


def test_a_forged_fresh_resume_of_an_unknown_run_runs_nothing(own_settings) -> None:  # type: ignore[no-untyped-def]
    engine = engine_of(own_settings)
    # Its first step is inline: it would run inside the resume itself.
    forged = RunRecord(run_id=str(uuid.uuid4()), workflow=flows.inline_sequence.name, status="pending",
                       created_at=time.time(), args="[[3],{}]")
    deliver_first(engine, forged)
    assert engine.store.read_history(forged.run_id) == []  # no step ran or was recorded
    transport = engine.transport
    assert isinstance(transport, RecordingTransport)
    assert transport.steps == [] and transport.resumes == []
    assert [d["run_id"] for _, d in transport.dead_letters] == [forged.run_id]
    assert engine.store.find_run(forged.run_id) is None


def test_a_fresh_first_delivery_reads_the_run_but_not_its_history(own_settings) -> None:  # type: ignore[no-untyped-def]
    engine = engine_of(own_settings)
    run_id, _ = engine.create_run(get_workflow(flows.sequence.name), "[[4],{}]")
    stored = engine.store.get_run(run_id)
    deliver_first(engine, dataclasses.replace(stored, args="[[99],{}]"))  # the stored arguments win
    run = engine.store.get_run(run_id)
    assert (run.status, run.result) == ("completed", "6")
    assert engine.cache.queries == 0  # a run as created has no history to Query
