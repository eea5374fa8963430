"""Deferral of runs no worker serves (core/admission/deferral.py): backoff from ``defer_seconds`` to
``defer_max_seconds``, the deferral kept on the run item by the deferring write, and the
request cost of a deferred run over virtual hours (issue 23, item 8)."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any, Callable

import pytest

from tests.replay.ports import SETTINGS
from tests.replay.test_replay import drain
from workflows import runtime, step, workflow
from workflows.cli import commands as cli
from workflows.core.admission import deferral as deferral_module
from workflows.core.admission.deferral import FLAT_TRIES, current_deferral
from workflows.core.engine import Engine
from workflows.core.model.records import RunStatus
from workflows.core.model.registry import get_workflow, scope
from workflows.memory import ManualClock, MemoryStore, RecordingTransport

#: Requests beat makes on every sweep whoever is due (not a deferred run's cost).
SWEEP_REQUESTS = {"query due timers"}


@step
def deferral_step(x: int) -> int:
    return x + 1


def define() -> None:
    @workflow(name="deferral_flow")
    def deferral_flow(x: int) -> int:
        return deferral_step(x)


def counting(store: MemoryStore) -> Counter[str]:
    """Count the store's requests by name."""
    counts: Counter[str] = Counter()

    def intercept(name: str, atomic: Callable[[], Any]) -> Any:
        counts[name] += 1
        return atomic()

    store.interceptor = intercept
    return counts


def unserved_run(engine: Engine) -> str:
    """A run of a workflow this worker does not have (defined only while it is started)."""
    with scope(redefine=True):
        define()
        run_id, _ = engine.create_run(get_workflow("deferral_flow"), json.dumps([[1], {}]))
    return run_id


def run_for(engine: Engine, clock: ManualClock, seconds: float, tick: float = 5.0) -> None:
    """Beat's sweep every ``tick`` seconds of virtual time for ``seconds``, each followed by the worker."""
    end = clock.now() + seconds
    while clock.now() < end:
        clock.advance(tick)
        drain(engine)


def per_run(counts: Counter[str]) -> int:
    return sum(n for name, n in counts.items() if name not in SWEEP_REQUESTS)


def test_deferrals_in_a_row_back_off_to_the_cap() -> None:
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    engine = Engine(store, RecordingTransport(), SETTINGS, clock=clock)
    run_id = unserved_run(engine)
    began = clock.now()
    drain(engine)
    waits = []
    for _ in range(20):
        run = store.get_run(run_id)
        deferral = current_deferral(run)
        assert deferral is not None and run.status == RunStatus.SUSPENDED
        assert store.timers.get(f"{run_id}#defer")["due_at"] == deferral.next_at
        waits.append(deferral.next_at - clock.now())
        clock.advance(deferral.next_at - clock.now() + 0.01)
        drain(engine)
    cap, base = SETTINGS.defer_max_seconds, SETTINGS.defer_seconds
    for n, wait in enumerate(waits, start=1):
        expected = base * 2 ** max(0, n - FLAT_TRIES)  # a rolling deploy's bounces first, then doubling
        if expected >= cap:
            assert abs(wait - cap) < 1e-6, (n, waits)
        else:
            assert 0.8 * expected - 1e-6 <= wait <= expected + 1e-6, (n, waits)
    last = current_deferral(store.get_run(run_id))
    assert last is not None and last.count == 21 and last.since == began
    assert "deferral_flow" in last.reason and "not registered" in last.reason
    assert store.get_run(run_id).recoveries == 0


@pytest.mark.parametrize("jitter", [(0.8, 0.8), (1.0, 1.0)])  # the shortest and the longest waits
def test_a_deferred_run_costs_at_most_100_requests_its_first_hour_and_5_an_hour_after(
        monkeypatch: pytest.MonkeyPatch, jitter: tuple[float, float]) -> None:
    monkeypatch.setattr(deferral_module, "JITTER", jitter)
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    engine = Engine(store, RecordingTransport(), SETTINGS, clock=clock)
    run_id = unserved_run(engine)
    counts = counting(store)

    def hour() -> tuple[int, int]:
        before = counts.copy()
        run_for(engine, clock, 3600)
        spent = counts - before
        return per_run(spent), spent["wake run"]  # each wake sends one resume message

    first = hour()
    later = [hour() for _ in range(4)]
    print(f"deferred run: first hour {first[0]} DynamoDB requests, {first[1]} resumes sent; "
          f"later hours {[n for n, _ in later]} requests, {[s for _, s in later]} resumes")
    assert first[0] <= 100
    assert all(n <= 5 for n, _ in later)
    assert store.get_run(run_id).status == RunStatus.SUSPENDED


def test_a_deferred_run_shows_as_deferred_with_its_reason_in_the_cli(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "_imports", lambda: None)
    clock = ManualClock(time.time())  # the CLI tells "next try in" against the wall clock
    store = MemoryStore(SETTINGS, clock)
    engine = Engine(store, RecordingTransport(), SETTINGS, clock=clock)
    with runtime.use_engine(engine):
        run_id = unserved_run(engine)
        drain(engine)
        clock.advance(SETTINGS.defer_seconds + 1)
        drain(engine)  # deferred twice in a row
        assert cli.main(["runs", "deferred"]) == 0
        out = capsys.readouterr().out
        assert run_id in out and "deferral_flow" in out and "not registered" in out and "2 tries" in out
        assert "1 deferred run(s)" in out
        assert cli.main(["runs", "show", run_id]) == 0
        assert "deferred  workflow 'deferral_flow' is not registered" in capsys.readouterr().out
        assert cli.main(["runs", "list", "--status", "suspended"]) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(run_id))
        assert row.split()[1:3] == ["deferral_flow", "deferred"]
        with scope(redefine=True):  # a worker with the code takes it at the next try
            define()
            clock.advance(2 * SETTINGS.defer_seconds + 1)
            drain(engine)
            assert store.get_run(run_id).status == RunStatus.COMPLETED
            assert current_deferral(store.get_run(run_id)) is None
        assert cli.main(["runs", "deferred"]) == 0
        assert "0 deferred run(s)" in capsys.readouterr().out


def test_deferrals_are_counted_in_prometheus() -> None:
    from prometheus_client import REGISTRY

    from workflows.observe.metrics import Metrics

    def deferrals() -> float:
        return REGISTRY.get_sample_value("workflows_deferrals_total",
                                         {"workflow": "deferral_flow", "reason": "workflow"}) or 0.0

    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    engine = Engine(store, RecordingTransport(), SETTINGS, clock=clock, observer=Metrics())
    before = deferrals()
    unserved_run(engine)
    drain(engine)
    clock.advance(SETTINGS.defer_seconds + 1)
    drain(engine)
    assert deferrals() == before + 2
    assert (REGISTRY.get_sample_value("workflows_deferred_for_seconds_count", {"workflow": "deferral_flow"}) or 0) >= 2


def test_the_dashboard_run_page_shows_the_deferral(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")
    from tests.unit.test_web_tags import TOKEN, get
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    clock = ManualClock()
    engine = Engine(MemoryStore(SETTINGS, clock), RecordingTransport(), SETTINGS, clock=clock)
    with runtime.use_engine(engine):
        run_id = unserved_run(engine)
        drain(engine)
        status, body = get(create_app(TOKEN), f"/runs/{run_id}")
    assert status == 200 and 'id="deferral"' in body
    assert "workflow &#39;deferral_flow&#39; is not registered" in body and "1 try" in body
