"""``workflows flow limits|slots`` over an in-memory engine."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.replay.ports import memory_engine
from tests.testing import flow_flows, workflow_limit_flows
from workflows import runtime
from workflows.cli import commands as cli
from workflows.core.engine import Engine


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    monkeypatch.setattr(cli, "_imports", lambda: None)
    assert flow_flows.flow_one_per_customer.name  # the limited steps are registered
    with runtime.use_engine(memory_engine()) as engine:
        yield engine


def test_flow_limits_lists_the_limited_steps(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["flow", "limits"]) == 0
    out = capsys.readouterr().out
    assert "flow_one_per_customer" in out and "customer" in out
    assert "flow_two_per_second" in out and " 2 " in out


def test_flow_slots_shows_live_and_expired_holders(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    store, now = engine.store, engine.now()
    store.acquire_slot("step:flow_one_per_customer#c9", 1, "run-1#0##1", now + 60)
    assert cli.main(["flow", "slots", "flow_one_per_customer", "--key", "c9"]) == 0
    out = capsys.readouterr().out
    assert "run-1#0##1" in out and "held" in out and "1 of 1 slot(s) held" in out


def test_flow_slots_refuses_a_missing_or_needless_key(engine: Engine, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["flow", "slots", "flow_one_per_customer"]) == cli.EXIT_USAGE
    assert "give --key" in capsys.readouterr().err
    assert cli.main(["flow", "slots", "flow_two_per_second"]) == cli.EXIT_USAGE
    assert "no concurrency limit" in capsys.readouterr().err


def test_flow_queued_shows_running_and_waiting_runs_in_order(engine: Engine,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert workflow_limit_flows.one_per_customer.name
    store = engine.store
    store.acquire_slot("workflow:one_per_customer#c7", 1, "run-a", engine.now() + 10**9)
    store.enqueue_waiter("queue:workflow:one_per_customer#c7", 2_000_000, "run-c")
    store.enqueue_waiter("queue:workflow:one_per_customer#c7", 1_000_000, "run-b")
    assert cli.main(["flow", "queued", "one_per_customer", "--key", "c7"]) == 0
    out = capsys.readouterr().out
    assert out.index("run-a") < out.index("run-b") < out.index("run-c")
    assert "1 of 1 slot(s) held, 2 run(s) waiting" in out
    assert cli.main(["flow", "queued", "one_per_customer"]) == cli.EXIT_USAGE
    assert "give --key" in capsys.readouterr().err
    assert cli.main(["flow", "queued", "two_at_a_time", "--key", "x"]) == cli.EXIT_USAGE
    assert "limited globally" in capsys.readouterr().err
