"""What the dashboard's pages show, read through the client API and the Store port.

Every read is a GetItem or a Query (the listing indexes, a run's history, its hooks by
run); nothing scans. Nothing returned here holds a hook token, a nonce or a token hash.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from beat.cron import ScheduleSpec, next_fire

from .. import codec
from ..client import STATUSES, get_run, list_run_summaries, list_runs
from ..core.admission.deferral import current_deferral
from ..core.model.failures import Failure
from ..core.model.failures import parse as parse_failure
from ..core.model.join_layout import fan_out_width_at
from ..core.model.pricing import estimate_cost
from ..core.model.records import LIVE, BranchRecord, EventRecord, OpKind, RunRecord, RunStatus
from ..core.ops.events import EVENT_SEQ_BASE, EVENT_SEQ_SPAN
from ..core.ops.fanout import join_id
from ..core.ops.inbox import waiting_for
from ..core.replay.children import ChildLink
from ..core.storage.payloads import describe_payload
from ..core.storage.timeline import step_rows, timeline
from ..errors import SerializationError
from ..options import TimeRange
from ..runtime import get_engine
from ..schedules import ScheduleInfo, list_schedules
from .timeline import Chart, branch_positions, chart_for

PAGE_SIZE = 50
MAX_SHOWN = 4000  # characters of one payload shown in a page
NEXT_FIRES = 3


def pretty(value: Any) -> str:
    """A payload as indented JSON, cut to ``MAX_SHOWN`` characters."""
    text = json.dumps(value, indent=2, default=str, ensure_ascii=False)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + f"\n... ({len(text)} characters in all)"


def pretty_text(text: str | None) -> str:
    """Stored JSON text as indented JSON (the text itself if it is not JSON)."""
    if text is None:
        return ""
    try:
        return pretty(json.loads(text))
    except ValueError:
        return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def runs_page(status: str | None, workflow: str | None, cursor: str | None, since: float | None = None,
              until: float | None = None, tag: str | None = None) -> dict[str, Any]:
    """One page of runs created within ``since``..``until``, newest first, with the cursor of the next page.

    Runs are read as the listing index holds them (``list_run_summaries``: no read of the runs).
    With a filter this is one index Query. A ``tag`` (``key=value``) Queries the tags index instead
    (``list_runs``: a Query and a BatchGet of the runs) and combines with ``workflow``, not ``status``.
    Without a filter, the runs of every status are merged newest first (``core/storage/newest.py``, as the
    API and the CLI list them: one Query per status a page).
    """
    if tag:
        tagged = list_runs(status=status or None, workflow=workflow or None, limit=PAGE_SIZE, cursor=cursor or None,
                           created=TimeRange(since, until), tag=tag)
        return {"runs": list(tagged), "next_cursor": tagged.next_cursor}
    if status or workflow:
        page = list_run_summaries(status=status or None, workflow=workflow or None, limit=PAGE_SIZE,
                                  cursor=cursor or None, created=TimeRange(since, until))
        return {"runs": list(page), "next_cursor": page.next_cursor}
    page = list_run_summaries(limit=PAGE_SIZE, cursor=cursor or None, created=TimeRange(since, until))
    return {"runs": list(page), "next_cursor": page.next_cursor}


def utc_minute(text: str, what: str) -> float | None:
    """A time filter as the page's form sends it (``YYYY-MM-DDTHH:MM``, UTC) in epoch seconds.

    Raises:
        SerializationError: the text is not such a time.
    """
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        raise SerializationError(f"{what} must be a UTC time like 2026-12-03T17:30, got {text[:40]!r}") from None


def time_window(start: str, end: str) -> tuple[float | None, float | None]:
    """The runs page's ``from`` and ``to`` filters in epoch seconds (None when not given)."""
    return utc_minute(start, "from"), utc_minute(end, "to")


#: How long the dashboard reuses a count of runs by status, and the window of ended runs it counts.
COUNTS_TTL = 30.0
ENDED_WINDOW = 86400.0
COUNT_CAP = 10_000
_counts: dict[tuple[float | None, float | None], tuple[float, list[dict[str, Any]]]] = {}
_counts_lock = threading.Lock()


def status_counts(since: float | None, until: float | None) -> dict[str, Any]:
    """Runs by status for the runs page, reused for ``COUNTS_TTL`` seconds per window.

    Without a time window, live runs are counted whatever their age and ended runs over the
    last ``ENDED_WINDOW`` seconds; a count stops at ``COUNT_CAP`` (shown with a ``+``).
    """
    now = time.time()
    default = since is None and until is None
    key = (since, until)
    with _counts_lock:
        cached = _counts.get(key)
    if cached is None or now - cached[0] > COUNTS_TTL:
        rows = []
        for status in STATUSES:
            lower = now - ENDED_WINDOW if default and status not in LIVE else since
            count, capped = get_engine().store.count_runs(status, since=lower, until=until, cap=COUNT_CAP)
            rows.append({"status": status, "count": count, "capped": capped})
        cached = (now, rows)
        with _counts_lock:
            _counts[key] = cached
            for old in [k for k, (at, _) in _counts.items() if now - at > COUNTS_TTL]:
                del _counts[old]
    return {"counts": cached[1], "counted_at": cached[0], "counts_window": "default" if default else "filter"}


@dataclass(frozen=True)
class HookRow:
    """A hook as the dashboard shows it: never its token, nor its hash."""

    pos: int
    name: str
    status: str
    created_at: float
    expires_at: float | None
    completed_at: float | None


def _branches(run: RunRecord, history: list[EventRecord]) -> dict[int, tuple[list[EventRecord], list[BranchRecord]]]:
    store = get_engine().store
    names = {e.pos: e.name for e in history if e.kind == OpKind.PARALLEL.value and e.is_outcome}
    return {pos: (store.read_history(join_id(run.run_id, pos)),
                  store.branch_results(join_id(run.run_id, pos), fan_out_width_at(pos, names, run.waiting)))
            for pos in branch_positions(history, run)}


def _event_rows(run: RunRecord, history: list[EventRecord]) -> list[dict[str, Any]]:
    rows = []
    for event in timeline(run, history, describe_payload):  # hook records (nonce, hash) are left out there
        detail = {k: v for k, v in event.items() if k in ("data", "result") and v is not None}
        rows.append({**event, "detail": "\n".join(pretty_text(v) for v in detail.values())})
    return rows


def requests_line(run: RunRecord) -> str:
    """The requests counted for a run and their estimated cost, e.g. ``12 DynamoDB, 3 SQS; est. $0.000004``."""
    cost = estimate_cost(run.ddb_reads, run.ddb_writes, run.sqs_sends)
    return f"{run.ddb_reads + run.ddb_writes} DynamoDB, {run.sqs_sends} SQS; est. ${cost:.6f}"


def run_view(run_id: str) -> dict[str, Any]:
    """Everything the run page shows: the run, its links, timeline, steps, hooks, what waits for it
    (signals and update requests not taken yet) and history.

    Raises:
        RunNotFound: no run has this id.
    """
    handle = get_run(run_id)
    run = handle.record()
    history = handle.history()
    now = time.time()
    chart: Chart = chart_for(run, history, now, _branches(run, history))
    hooks = [HookRow(h.pos, h.name, h.status, h.created_at, h.expires_at, h.completed_at)
             for h in get_engine().store.hooks_for_run(run_id)]
    children = [ChildLink.from_data(e.data) for e in history if e.kind == OpKind.CHILD.value and e.is_outcome]
    waiting = run.waiting or {}
    failed = parse_failure(run.result) if run.status == RunStatus.FAILED else None  # what the workflow raised
    steps = [{**row, "chain": Failure.from_dict(row["failure"]).describe_chain() if row["failure"] else None}
             for row in step_rows(run, history, describe_payload)]
    return {
        "run": run,
        "requests": requests_line(run),
        "args": pretty(codec.loads(describe_payload(run.args))),  # never fetches a large payload
        "result": pretty_text(describe_payload(run.result)) if run.result is not None and not failed else None,
        "chart": chart,
        "steps": steps,
        "failure_chain": failed.describe_chain() if failed else (
            next((s["chain"] for s in reversed(steps) if s["chain"]), None) if run.error else None),
        "hooks": hooks,
        "events": _event_rows(run, history),
        "children": children,  # each with its link: detached, or its parent-close policy
        "chain": [h.run_id for h in handle.chain()] if run.continued_from or run.continued_to else [],
        "waiting": {k: waiting[k] for k in ("kind", "name", "due", "since") if waiting.get(k) is not None},
        "deferral": current_deferral(run),  # no worker that met it serves it (docs/versioning.md)
        "event_values": event_rows(run_id),
        "inbox": [] if run.is_terminal else [(w, pretty_text(describe_payload(w.payload)))
                                            for w in waiting_for(get_engine().store, run, history)],
    }


def event_rows(run_id: str) -> list[tuple[str, str]]:
    """The run's event keys and latest values (``set_event``), each shown without fetching a large payload."""
    found = get_engine().store.read_history(run_id, after_seq=EVENT_SEQ_BASE - 1,
                                            until_seq=EVENT_SEQ_BASE + EVENT_SEQ_SPAN - 1)
    return [(r.name, pretty_text(describe_payload(r.data))) for r in sorted(found, key=lambda r: r.name or "")
            if r.name]


def upcoming(info: ScheduleInfo, count: int = NEXT_FIRES) -> list[datetime]:
    """The next fire times of a schedule: the stored next one, then its timetable's (without jitter)."""
    if info.paused or info.next_fire_at is None:
        return []
    spec = ScheduleSpec(cron=info.cron, every=info.every, timezone=info.timezone, start_at=info.start_at,
                        end_at=info.end_at)
    fires = [info.next_fire_at]
    while len(fires) < count:
        following = next_fire(spec, fires[-1])
        if following is None:
            break
        fires.append(following)
    return fires


def schedules_page(cursor: str | None) -> dict[str, Any]:
    """One page of schedules sorted by id, each with its next fire times."""
    page = list_schedules(limit=PAGE_SIZE, cursor=cursor or None)
    return {"schedules": [(info, upcoming(info)) for info in page], "next_cursor": page.next_cursor}


def when(value: float | datetime | None) -> str:
    """A time in UTC to the millisecond, or ``-``."""
    if value is None:
        return "-"
    moment = value if isinstance(value, datetime) else datetime.fromtimestamp(value, timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
