"""The first-of wait with real worker processes, beat and the moto server: a signal beats a slow step
(whose result is recorded in the race's join and never returned), a step beats a timer and the signal
sent later is taken by the next wait, a timer beats a slow step; each winner recorded once."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e import first_flows as flows
from tests.e2e.flows import counter_dir
from tests.waiting import wait_for
from workflows import send_signal
from workflows.core.model.records import OpKind
from workflows.core.ops.fanout import join_id

pytestmark = pytest.mark.e2e


def _waits_on(store, run_id: str, kind: str) -> bool:  # type: ignore[no-untyped-def]
    run = store.get_run(run_id)
    return run.status == "suspended" and (run.waiting or {}).get("kind") == kind


def _winners(store, run_id: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.status for e in store.read_history(run_id) if e.kind == OpKind.FIRST_OF.value]


def test_a_signal_beats_a_slow_step_whose_result_is_recorded_not_returned(cluster, store) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    run = flows.e2e_race.start(tag, 4, 600)
    wait_for(lambda: _waits_on(store, run.run_id, "first_of"), 30, what="the race waits")
    send_signal(run.run_id, "go", "now")
    assert run.result(timeout=60) == {"won": "go", "value": "now"}
    assert _winners(store, run.run_id) == ["won"]
    wait_for(lambda: store.branch_results(join_id(run.run_id, 0), 1) != [], 30, what="the slow step's result")
    assert (counter_dir() / f"{tag}-work").read_text() == "x"  # it ran once, after the race was decided


def test_a_step_beats_a_timer_and_the_signal_sent_later_waits_for_the_next_wait(cluster, store) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    run = flows.e2e_race.start(tag, 0, 600)
    wait_for(lambda: _waits_on(store, run.run_id, "signal"), 30, what="the wait after the race")
    send_signal(run.run_id, "go", "late")
    assert run.result(timeout=60) == {"won": "work", "value": 0, "later": "late"}


def test_a_timer_beats_a_slow_step(cluster, store) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    run = flows.e2e_race.start(tag, 6, 1)
    wait_for(lambda: _waits_on(store, run.run_id, "signal"), 30, what="the timer won, the run waits for go")
    assert not (counter_dir() / f"{tag}-work").exists()  # the step still runs
    send_signal(run.run_id, "go", "after")
    assert run.result(timeout=60) == {"won": "late", "value": None, "later": "after"}
