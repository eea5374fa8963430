"""Payloads under the payload limit never break a run, however they are stored."""

from __future__ import annotations

import argparse
import json
import uuid

import pytest

import workflows.client
from persistence import DynamoStore
from persistence.provision import create_tables
from tests.contract.support import record_outcome
from tests.e2e import payload_flows
from workflows import codec
from workflows.cli.commands import cmd_runs_show
from workflows.core.background.sweeper import fire_due_timers
from workflows.core.engine import Engine
from workflows.core.model.records import TimerRecord
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step
from workflows.memory import RecordingTransport
from workflows.settings import Settings

#: Empty strings whose encoding is just under the 256 KiB payload limit; escaped once more
#: (each ``"`` as ``\\"``) it would be ~425 KB, over DynamoDB's 400 KB item limit.
BLANKS = 85_000


@pytest.fixture(scope="module")
def own_settings(settings: Settings) -> Settings:
    own = settings.with_(table_prefix=f"pl{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    return own


@pytest.fixture()
def engine(own_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Engine:
    engine = Engine(DynamoStore(own_settings), RecordingTransport(), own_settings)
    monkeypatch.setattr(workflows.client, "get_engine", lambda: engine)
    return engine


def test_a_large_argument_and_a_large_result_fit(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    text = "a" * 210_000
    args = codec.dumps([[text], {}], limit=engine.settings.max_payload_bytes)
    run_id, _ = engine.create_run(get_workflow(payload_flows.shout.name), args)
    engine.resume(run_id)
    handle = workflows.client.RunHandle(run_id)
    assert handle.status() == "completed"
    assert handle.result() == text.upper()
    assert handle.history() == []  # the result record is not an op of the run
    assert engine.store.m.Run.get(run_id).result is None  # kept out of the run item
    listed = workflows.client.list_runs(workflow=payload_flows.shout.name, limit=1000)
    assert [r.result for r in listed if r.run_id == run_id] == [codec.dumps(text.upper())]
    assert handle.events()[-1]["result"] == codec.dumps(text.upper())
    assert cmd_runs_show(argparse.Namespace(run_id=run_id)) == 0
    assert "result    \"" + "A" * 1000 in capsys.readouterr().out


def test_a_signal_of_many_empty_strings_is_received(engine: Engine) -> None:
    payload = [""] * BLANKS
    assert len(codec.dumps(payload)) < engine.settings.max_payload_bytes
    run_id, _ = engine.create_run(get_workflow(payload_flows.signal_count.name), "[[],{}]")
    engine.resume(run_id)
    workflows.client.send_signal(run_id, "items", payload)
    engine.resume(run_id)
    run = engine.store.get_run(run_id)
    assert (run.status, run.result, run.error) == ("completed", str(BLANKS), None)


def test_a_step_with_many_empty_strings_retries(engine: Engine) -> None:
    transport = engine.transport
    assert isinstance(transport, RecordingTransport)
    run_id, _ = engine.create_run(get_workflow(payload_flows.retried_count.name), f"[[{BLANKS}],{{}}]")
    engine.resume(run_id)
    [first] = transport.steps
    execute_step(engine, first)  # attempt 1 fails: its retry timer holds the arguments
    fire_due_timers(engine)
    [_, second] = transport.steps
    assert (second.attempt, second.args) == (2, first.args)
    execute_step(engine, second)
    run = engine.store.get_run(run_id)
    assert (run.status, run.result, run.error) == ("completed", str(BLANKS), None)


def test_a_result_that_fits_stays_in_the_run_item(engine: Engine) -> None:
    run_id, _ = engine.create_run(get_workflow(payload_flows.shout.name), codec.dumps([["b" * 100_000], {}]))
    engine.resume(run_id)
    assert engine.store.m.Run.get(run_id).result == codec.dumps("B" * 100_000)
    assert engine.store.get_run(run_id).result == codec.dumps("B" * 100_000)


def test_signal_and_retry_data_written_by_older_versions_still_decode(engine: Engine) -> None:
    store, transport = engine.store, engine.transport
    assert isinstance(transport, RecordingTransport)
    run_id, _ = engine.create_run(get_workflow(payload_flows.signal_count.name), "[[],{}]")
    engine.resume(run_id)
    old_signal = json.dumps({"key": "items#1#ab", "payload": codec.dumps(["a", "b"])})
    assert record_outcome(store, run_id, 0, "signal", "received", name="items", data=old_signal)
    engine.resume(run_id)
    assert store.get_run(run_id).result == "2"

    run_id, _ = engine.create_run(get_workflow(payload_flows.retried_count.name), "[[3],{}]")
    engine.resume(run_id)
    [first] = [m for m in transport.steps if m.run_id == run_id]
    old_retry = codec.dumps({"step": first.step, "attempt": 2, "args": first.args, "branch": None, "queue": None})
    store.put_timer(TimerRecord(timer_id=f"{run_id}#0#retry#", kind="retry", run_id=run_id, due_at=0.0, pos=0,
                                data=old_retry))
    fire_due_timers(engine)
    [_, second] = [m for m in transport.steps if m.run_id == run_id]
    assert (second.attempt, second.args) == (2, first.args)
    execute_step(engine, second)
    assert store.get_run(run_id).result == "3"
