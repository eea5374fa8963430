"""Readable views of a run: its timeline and its steps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ... import codec
from ..model.failures import parse as parse_failure
from ..model.records import EventRecord, RunRecord, with_last_outcome
from ..model.states import EventStatus, OpKind

if TYPE_CHECKING:
    from .ports import Store

#: Maps stored payload text (or record data embedding one) to the text shown: the payload
#: itself (``Payloads.resolve_record``) or a description of it (``describe_payload``).
Show = Callable[[str | None], str | None]


def _as_stored(text: str | None) -> str | None:
    return text


def run_history(store: Store, run_id: str) -> list[EventRecord]:
    """A run's whole history as every reader sees it: its records (one Query) with the outcome its
    end carries on the run item (one GetItem; see ``records.with_last_outcome``)."""
    records = store.read_history(run_id)
    return with_last_outcome(store.find_run(run_id), records)


def timeline(run: RunRecord, history: list[EventRecord], show: Show = _as_stored) -> list[dict[str, Any]]:
    """The run's history in order, framed by its start and (if ended) its end."""
    history = with_last_outcome(run, history)
    events: list[dict[str, Any]] = [{"seq": -1, "at": run.created_at, "type": "run_started",
                                     "workflow": run.workflow, "args": codec.loads(show(run.args))}]
    for event in history:
        row: dict[str, Any] = {"seq": event.seq, "pos": event.pos, "at": event.at,
                               "type": f"{event.kind}_{event.status}", "name": event.name}
        if event.attempt is not None:
            row["attempt"] = event.attempt
        if event.error:
            row["error"] = event.error
        failure = parse_failure(event.data) if event.status == EventStatus.FAILED else None
        if failure is not None:  # a failed step's structure (core.model.failures), not a payload
            row["failure"] = failure.to_dict()
        elif event.data is not None and event.kind != OpKind.HOOK:  # hook records of older versions hold the token
            row["data"] = show(event.data)
        events.append(row)
    if run.is_terminal:
        events.append({"seq": 10**12, "at": run.ended_at, "type": f"run_{run.status}", "error": run.error,
                       "result": show(run.result), "continued_to": run.continued_to})
    return events


def step_rows(run: RunRecord, history: list[EventRecord], show: Show = _as_stored) -> list[dict[str, Any]]:
    """One row per step op: outcome, attempts and timing (in-flight steps included)."""
    history = with_last_outcome(run, history)
    rows: dict[int, dict[str, Any]] = {}
    for event in history:
        if event.kind not in (OpKind.STEP, OpKind.ATTEMPT):
            continue
        row = rows.setdefault(event.pos, {"seq": event.pos, "name": event.name, "status": "running",
                                          "attempts": 0, "started_at": event.started_at, "finished_at": None,
                                          "error": None, "result": None, "failure": None})
        row["attempts"] = max(row["attempts"], event.attempt or 1)
        row["error"] = event.error
        if event.kind == OpKind.ATTEMPT:
            row["status"] = "retrying"
        else:
            failure = parse_failure(event.data) if event.status == EventStatus.FAILED else None
            row.update(status=event.status, finished_at=event.at, failure=failure and failure.to_dict(),
                       result=codec.loads(show(event.data)) if event.status == EventStatus.COMPLETED else None)
    waiting = run.waiting or {}
    if not run.is_terminal and waiting.get("kind") == OpKind.STEP and run.cursor not in rows:
        rows[run.cursor] = {"seq": run.cursor, "name": waiting.get("name"), "status": "running", "attempts": 1,
                            "started_at": waiting.get("since"), "finished_at": None, "error": None, "result": None,
                            "failure": None}
    return [rows[k] for k in sorted(rows)]
