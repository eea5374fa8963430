"""The run a first resume message carries: used only when it is plainly that run, fresh."""

from __future__ import annotations

import dataclasses

from workflows.celery.tasks import fresh_run
from workflows.core.model.records import RunRecord

RUN = RunRecord(run_id="r1", workflow="wf", status="pending", created_at=1.0, args="[[1],{}]")


def fields(run: RunRecord) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in dataclasses.asdict(run).items() if v is not None}


def test_round_trip() -> None:
    assert fresh_run("r1", fields(RUN)) == RUN


def test_unknown_fields_are_ignored() -> None:
    assert fresh_run("r1", {**fields(RUN), "from_a_newer_version": 1}) == RUN


def test_other_run_or_not_pending_or_incomplete_is_refused() -> None:
    assert fresh_run("r2", fields(RUN)) is None
    assert fresh_run("r1", fields(dataclasses.replace(RUN, status="running"))) is None
    assert fresh_run("r1", {"run_id": "r1"}) is None
