"""The runs page's counts by status and its time window, over the in-memory store."""

from __future__ import annotations

import time
import uuid
from typing import Iterator

import pytest

from workflows.core.model.records import RunEnding

pytest.importorskip("starlette")

from tests.replay.ports import memory_engine  # noqa: E402
from workflows.core.engine import Engine  # noqa: E402
from workflows.core.model.records import RunRecord  # noqa: E402
from workflows.errors import SerializationError  # noqa: E402
from workflows.runtime import use_engine  # noqa: E402
from workflows.web import views  # noqa: E402

DAY = 86400.0


@pytest.fixture()
def engine() -> Iterator[Engine]:
    engine = memory_engine()
    views._counts.clear()
    with use_engine(engine):
        yield engine
    views._counts.clear()


def add(engine: Engine, created_at: float, status: str = "pending") -> str:
    run_id = uuid.uuid4().hex
    engine.store.create_run(RunRecord(run_id=run_id, workflow="w", status="pending", created_at=created_at))
    if status != "pending":
        engine.store.finish_run(run_id, RunEnding(status))
    return run_id


def counts(page: dict) -> dict[str, tuple[int, bool]]:  # type: ignore[type-arg]
    return {row["status"]: (row["count"], row["capped"]) for row in page["counts"]}


def test_by_default_live_runs_of_any_age_and_runs_ended_in_the_last_day_are_counted(engine: Engine) -> None:
    now = time.time()
    add(engine, now - 3 * DAY)                 # pending for three days: counted
    add(engine, now - 60)
    add(engine, now - 3 * DAY, "completed")    # ended long ago: not counted
    add(engine, now - 60, "completed")
    add(engine, now - 30, "failed")
    shown = counts(views.status_counts(None, None))
    assert shown["pending"] == (2, False)
    assert shown["completed"] == (1, False) and shown["failed"] == (1, False)
    assert shown["cancelled"] == (0, False)


def test_a_window_bounds_every_status_and_counts_are_reused_for_a_while(engine: Engine) -> None:
    now = time.time()
    add(engine, now - 3 * DAY)
    inside = add(engine, now - 60, "completed")
    window = (now - 120, now)
    assert counts(views.status_counts(*window))["pending"] == (0, False)
    assert counts(views.status_counts(*window))["completed"] == (1, False)
    add(engine, now - 30, "completed")
    assert counts(views.status_counts(*window))["completed"] == (1, False)  # the count of 30 s ago
    views._counts.clear()
    assert counts(views.status_counts(*window))["completed"] == (2, False)
    page = views.runs_page("completed", "", "", *window)
    assert inside in [run.run_id for run in page["runs"]]
    assert [run.run_id for run in views.runs_page("", "", "", now - 10, now)["runs"]] == []


def test_a_count_stops_at_its_cap(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "COUNT_CAP", 3)
    now = time.time()
    for i in range(5):
        add(engine, now - i)
    assert counts(views.status_counts(None, None))["pending"] == (3, True)


def test_the_form_times_are_utc_minutes() -> None:
    assert views.time_window("2026-12-03T17:30", "") == (1796319000.0, None)
    with pytest.raises(SerializationError, match="from must be a UTC time"):
        views.time_window("yesterday", "")
