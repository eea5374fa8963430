"""The timeline's geometry: spans from a history, and their layout (pure functions, no store)."""

from __future__ import annotations

import json

from workflows.core.model.records import BranchRecord, EventRecord, RunRecord
from workflows.web.timeline import chart_for, layout, nice_step, spans, tick_label

T0 = 1_000.0


def run(**fields: object) -> RunRecord:
    return RunRecord(**{"run_id": "r", "workflow": "order", "status": "completed", "created_at": T0,
                        "ended_at": T0 + 10, **fields})  # type: ignore[arg-type]


def event(pos: int, sub: int, kind: str, status: str, at: float, **fields: object) -> EventRecord:
    return EventRecord("r", pos * 1000 + sub, kind, status, T0 + at, **fields)  # type: ignore[arg-type]


def test_one_span_per_attempt_with_failed_attempts_distinct() -> None:
    history = [event(0, 1, "attempt", "failed", 1, name="charge", attempt=1, error="boom", started_at=T0 + 0.5),
               event(0, 2, "attempt", "failed", 2, name="charge", attempt=2, error="boom", started_at=T0 + 1.5),
               event(0, 999, "step", "completed", 3, name="charge", attempt=3, started_at=T0 + 2.5)]
    found = spans(run(), history, now=T0 + 10)
    assert [(s.lane, s.kind, s.status, s.start - T0, s.end - T0) for s in found if s.end] == [
        ("#0 charge", "attempt", "failed", 0.5, 1), ("#0 charge", "attempt", "failed", 1.5, 2),
        ("#0 charge", "attempt", "completed", 2.5, 3)]
    assert "boom" in found[0].title


def test_a_wait_starts_where_the_op_before_ended_and_links_its_child() -> None:
    history = [event(0, 999, "step", "completed", 1, name="a", started_at=T0 + 0.5),
               event(1, 999, "sleep", "fired", 4),
               event(2, 999, "child", "started", 4.5, name="sub", data=json.dumps({"run_id": "r.2"})),
               event(3, 999, "child_result", "completed", 7, name="sub")]
    found = spans(run(), history, now=T0 + 10)
    sleep, child = [s for s in found if s.kind == "wait"]
    assert (sleep.start - T0, sleep.end - T0, sleep.status) == (1, 4, "fired")
    assert (child.start - T0, child.end - T0, child.link) == (4.5, 7, "r.2")
    two = [event(0, 999, "child", "started", 1, name="sub", data=json.dumps({"run_id": "r.0"})),
           event(1, 999, "child", "started", 2, name="sub", data=json.dumps({"run_id": "r.1"})),
           event(2, 999, "child_result", "completed", 3, name="sub")]
    assert [s.link for s in spans(run(), two, now=T0 + 10)] == [None]  # which child is not recorded


def test_the_current_op_is_drawn_until_now_or_the_runs_end() -> None:
    live = run(status="suspended", ended_at=None, cursor=1, waiting={"kind": "sleep", "due": T0 + 600})
    history = [event(0, 999, "step", "completed", 1, name="a", started_at=T0)]
    [_, wait] = spans(live, history, now=T0 + 5)
    assert (wait.kind, wait.status, wait.end, wait.start) == ("wait", "waiting", None, T0 + 1)
    cancelled = run(status="cancelled", ended_at=T0 + 3, cursor=1, waiting={"kind": "sleep"})
    [_, cut] = spans(cancelled, history, now=T0 + 5)
    assert (cut.status, cut.end) == ("cancelled", T0 + 3)
    running = run(status="running", ended_at=None, cursor=1, waiting={"kind": "step", "name": "b", "since": T0 + 2})
    [_, step] = spans(running, history, now=T0 + 5)
    assert (step.kind, step.status, step.start, step.end) == ("attempt", "running", T0 + 2, None)


def test_fan_out_branches_get_a_lane_each() -> None:
    history = [event(0, 999, "parallel", "completed", 5, name="3 branches")]
    attempts = [EventRecord("r#0", 1 * 1000 + 1, "attempt", "failed", T0 + 1, name="reserve", attempt=1,
                            started_at=T0 + 0.5)]
    results = [BranchRecord(0, "1", None), BranchRecord(1, "2", None), BranchRecord(2, None, "sold out")]
    found = spans(run(), history, now=T0 + 10, branches={0: (attempts, results)})
    assert sorted((s.lane, s.status) for s in found) == [
        ("#0.0 branch", "completed"), ("#0.1 reserve", "completed"), ("#0.1 reserve", "failed"),
        ("#0.2 branch", "failed")]
    [retried] = [s for s in found if s.lane == "#0.1 reserve" and s.status == "completed"]
    assert retried.start == T0 + 1 and retried.end == T0 + 5  # from its failed attempt's end to the join
    assert retried.approx and not [s for s in found if s.status == "failed" and s.lane == "#0.1 reserve"][0].approx


def test_layout_places_lanes_and_bars_on_one_axis() -> None:
    history = [event(0, 999, "step", "completed", 2, name="a", started_at=T0),
               event(1, 999, "step", "failed", 10, name="b", started_at=T0 + 2, error="x")]
    chart = chart_for(run(), history, now=T0 + 10)
    assert [label for _, label in chart.lanes] == ["#0 a", "#1 b"]
    first, second = chart.bars
    assert first.css == "bar attempt completed" and second.css == "bar attempt failed"
    assert first.x == 220 and abs(second.x + second.width - (900 - 10)) < 1e-6
    assert first.y < second.y
    assert [t.label for t in chart.ticks] == ["+0s", "+2s", "+4s", "+6s", "+8s", "+10s"]


def test_an_instant_bar_stays_visible_and_an_empty_run_draws_nothing() -> None:
    instant = [event(0, 999, "step", "completed", 0, name="a", started_at=T0)]
    assert chart_for(run(ended_at=T0), instant, now=T0).bars[0].width == 2.0
    assert layout([], T0, T0).bars == []


def test_ticks_are_round_and_labelled_from_the_start() -> None:
    assert nice_step(10) == 2 and nice_step(0.3) == 0.05 and nice_step(3600) == 1000
    assert [tick_label(x) for x in (1.5, 150, 3900)] == ["+1.5s", "+2m30s", "+1h05m"]
