"""``workflows schedules list|show|create|pause|resume|delete|trigger|backfill``."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any, Callable

EXIT_USAGE = 2


def _imports() -> None:
    from .commands import _imports as load_workflow_modules  # the CLI's loader: bad modules are a ConfigurationError

    load_workflow_modules()


def _when(value: dt.datetime | None) -> str:
    return "-" if value is None else value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _time(text: str) -> dt.datetime:
    """An ISO 8601 time from the command line; a time without an offset is read as UTC."""
    try:
        value = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return value if value.utcoffset() is not None else value.replace(tzinfo=dt.timezone.utc)


def _timetable(info: Any) -> str:
    if info.cron:
        return f"cron {info.cron!r} ({info.timezone})"
    return f"every {info.every:g}s"


def cmd_list(args: argparse.Namespace) -> int:
    from ..schedules import list_schedules

    page = list_schedules(workflow=args.workflow, state=args.state, limit=args.limit, cursor=args.cursor)
    print(f"{'SCHEDULE ID':36} {'WORKFLOW':20} {'STATE':7} {'OVERLAP':15} {'NEXT FIRE':24} TIMETABLE")
    for info in page:
        print(f"{info.schedule_id:36} {info.workflow:20} {info.state:7} {info.overlap:15} "
              f"{_when(info.next_fire_at):24} {_timetable(info)}")
    if page.next_cursor:
        print(f"next page: --cursor {page.next_cursor}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ..schedules import get_schedule

    info = get_schedule(args.schedule_id)
    rows = [
        ("schedule", info.schedule_id), ("workflow", info.workflow), ("state", info.state),
        ("timetable", _timetable(info)), ("start at", _when(info.start_at)), ("end at", _when(info.end_at)),
        ("jitter", f"{info.jitter:g}s"), ("overlap", info.overlap),
        ("catch-up", "latest missed fire only" if info.catchup_window is None else f"{info.catchup_window:g}s"),
        ("args", json.dumps(info.args)), ("kwargs", json.dumps(info.kwargs)),
        ("next fire", _when(info.next_fire_at)), ("last fire", _when(info.last_fire_at)),
        ("last run", info.last_run_id or "-"), ("running", ", ".join(map(_when, info.running)) or "-"),
        ("buffered", ", ".join(map(_when, info.buffered)) or "-"),
        ("fired", str(info.fired)), ("skipped", str(info.skipped)), ("declared", "yes" if info.declared else "no"),
        ("created", _when(info.created_at)), ("updated", _when(info.updated_at)),
    ]
    if info.last_error:
        rows.append(("last error", info.last_error))
    for label, value in rows:
        print(f"{label:10} {value}")
    return 0


def cmd_create(args: argparse.Namespace) -> int:
    from ..options import SchedulePolicy, Timetable
    from ..schedules import create_schedule
    from .commands import parse_json_option

    positional = parse_json_option("--args", args.args, list)  # before anything is imported or stored
    keywords = parse_json_option("--kwargs", args.kwargs, dict)
    _imports()
    timetable = Timetable(cron=args.cron, every=args.every, timezone=args.timezone, start_at=args.start_at,
                          end_at=args.end_at)
    policy = SchedulePolicy(overlap=args.overlap, catchup_window=args.catchup_window, jitter=args.jitter,
                            paused=args.paused)
    info = create_schedule(args.workflow, args=positional, kwargs=keywords, schedule_id=args.id,
                           timetable=timetable, policy=policy)
    print(f"created schedule {info.schedule_id} ({info.state}); next fire {_when(info.next_fire_at)}")
    return 0


def cmd_pause(args: argparse.Namespace) -> int:
    from ..schedules import pause_schedule

    pause_schedule(args.schedule_id)
    print(f"paused {args.schedule_id}")
    return 0


def cmd_unpause(args: argparse.Namespace) -> int:
    from ..schedules import resume_schedule

    _imports()
    info = resume_schedule(args.schedule_id)
    print(f"resumed {info.schedule_id}; next fire {_when(info.next_fire_at)}")
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from ..schedules import delete_schedule

    delete_schedule(args.schedule_id)
    print(f"deleted {args.schedule_id}")
    return 0


def cmd_trigger(args: argparse.Namespace) -> int:
    from ..schedules import trigger_schedule

    _imports()
    run = trigger_schedule(args.schedule_id, overlap=args.overlap)
    print(f"started run {run.run_id}" if run else "not started now: the overlap policy skipped or buffered the fire")
    return 0


def cmd_backfill(args: argparse.Namespace) -> int:
    from ..schedules import backfill_schedule

    _imports()
    count = backfill_schedule(args.schedule_id, args.start, args.end, overlap=args.overlap)
    print(f"backfill of {args.schedule_id}: {count} fire(s) started or buffered")
    return 0


def add_schedule_commands(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``workflows schedules ...`` to the command line."""
    from ..schedules import OVERLAP_POLICIES

    parent = add("schedules", lambda a: EXIT_USAGE, "create, inspect and steer schedules")
    schedules = parent.add_subparsers(dest="schedules_cmd", required=True)
    p = add("list", cmd_list, "list schedules, sorted by id", schedules)
    p.add_argument("--workflow")
    p.add_argument("--state", choices=["active", "paused"])
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor")
    add("show", cmd_show, "show a schedule and its bookkeeping", schedules).add_argument("schedule_id")
    p = add("create", cmd_create, "create a schedule", schedules)
    p.add_argument("workflow", help="registered workflow name (its module must be in WORKFLOWS_IMPORTS)")
    timetable = p.add_mutually_exclusive_group(required=True)
    timetable.add_argument("--cron", help="five-field cron expression, e.g. '*/5 * * * *'")
    timetable.add_argument("--every", help="interval: seconds or a duration like 90s, 5m, 1h")
    p.add_argument("--timezone", default="UTC", help="IANA time zone of --cron (default UTC)")
    p.add_argument("--id", help="schedule id (default: <workflow>-<random>)")
    p.add_argument("--overlap", default="skip", choices=OVERLAP_POLICIES)
    p.add_argument("--catchup-window", help="start fires missed by at most this long (default: latest only)")
    p.add_argument("--jitter", help="delay each fire by up to this long")
    p.add_argument("--start-at", type=_time, help="ISO 8601 time of the first possible fire (UTC if no offset)")
    p.add_argument("--end-at", type=_time, help="ISO 8601 time of the last possible fire (UTC if no offset)")
    p.add_argument("--args", default="[]", help="positional arguments, as a JSON array")
    p.add_argument("--kwargs", default="{}", help="keyword arguments, as a JSON object")
    p.add_argument("--paused", action="store_true", help="create it paused")
    for name, fn, text in (("pause", cmd_pause, "stop firing a schedule (running runs go on)"),
                           ("resume", cmd_unpause, "fire a paused schedule again from now (no backfill)"),
                           ("delete", cmd_delete, "delete a schedule (running runs go on)")):
        add(name, fn, text, schedules).add_argument("schedule_id")
    p = add("trigger", cmd_trigger, "fire a schedule now", schedules)
    p.add_argument("schedule_id")
    p.add_argument("--overlap", choices=OVERLAP_POLICIES, help="override the schedule's policy for this fire")
    p = add("backfill", cmd_backfill, "fire a schedule for each of its fire times in [start, end]", schedules)
    p.add_argument("schedule_id")
    p.add_argument("--start", type=_time, required=True, help="ISO 8601 time (UTC if no offset)")
    p.add_argument("--end", type=_time, required=True, help="ISO 8601 time (UTC if no offset)")
    p.add_argument("--overlap", choices=OVERLAP_POLICIES, help="override the schedule's policy for these fires")
