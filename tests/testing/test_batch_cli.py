"""``workflows batch ...`` on the in-memory ports (the testing kit): start, show, list, stop, and bad input."""

from __future__ import annotations

import json

import pytest

from tests.testing import batch_flows as flows
from workflows import get_batch
from workflows.cli.commands import main
from workflows.settings import Settings
from workflows.testing import WorkflowEnv


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv(settings=Settings(sweep_interval=1.0, batch_rate=2.0)) as kit:
        yield kit


def test_batch_commands(env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [env.start(flows.batch_waiter, i) for i in range(3)]
    env.driver.settle()
    assert main(["batch", "signal", "go", "--workflow", "batch_waiter", "--data", '{"n": 1}', "--rate", "5"]) == 0
    batch_id = capsys.readouterr().out.strip()
    assert main(["batch", "show", batch_id]) == 0
    out = capsys.readouterr().out
    assert "operation  signal" in out and "filter     workflow=batch_waiter" in out and "rate 5 runs/s" in out
    env.run_until_idle()
    assert [r.result() for r in runs] == [{"total": i + 1, "got": {"n": 1}} for i in range(3)]
    assert main(["batch", "show", batch_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["state"], shown["done"], shown["params"]) == ("completed", 3, {"name": "go", "payload": {"n": 1}})
    assert main(["batch", "tag", "--set", "triage=q3", "--set", "old=", "--status", "completed"]) == 0
    tagged = capsys.readouterr().out.strip()
    assert main(["batch", "stop", tagged]) == 0
    assert "state      stopped" in capsys.readouterr().out
    assert main(["batch", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [tagged, batch_id]
    assert get_batch(tagged).params == {"tags": {"triage": "q3", "old": None}}


def test_bad_batch_input_is_refused_with_one_line(env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "cancel"]) == 1  # no filter
    assert "InvalidBatch" in capsys.readouterr().err
    assert main(["batch", "signal", "go", "--status", "suspended", "--data", "{nope"]) == 2
    assert "--data is not valid JSON" in capsys.readouterr().err
    assert main(["batch", "show", "missing"]) == 1
    assert "BatchNotFound" in capsys.readouterr().err


def test_follow_with_json_prints_a_json_line_per_chunk_then_the_batch(
        env: WorkflowEnv, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``--follow --json`` prints what ``--follow`` prints, as JSON lines: the batch after each chunk,
    then the batch as it ended (the last line, as ``batch show --json`` prints it)."""
    import time
    import types

    from workflows.batches import driver

    runs = [env.start(flows.batch_waiter, i) for i in range(3)]
    env.driver.settle()
    # the driver waits out the batch's throttle in real time: here, in the env's virtual time
    monkeypatch.setattr(driver, "time", types.SimpleNamespace(sleep=env.clock.advance, monotonic=time.monotonic))
    capsys.readouterr()
    assert main(["batch", "cancel", "--workflow", "batch_waiter", "--follow", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(b["state"], b["selected"], b["done"]) for b in lines] == [
        ("running", 2, 2), ("completed", 3, 3), ("completed", 3, 3)]  # 2 runs a chunk (rate 2, sweep 1 s)
    assert len({b["batch_id"] for b in lines}) == 1 and lines[-1] == get_batch(lines[0]["batch_id"]).to_dict()
    env.run_until_idle()
    assert {r.status() for r in runs} == {"cancelled"}
