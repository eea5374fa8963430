"""``workflows runs get-event`` and ``workflows runs stream``: what a run publishes (``workflows.events``)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

#: The longest pause of ``runs stream --follow`` between two reads.
FOLLOW_POLL = 1.0


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def print_event_values(run_id: str) -> None:
    """The run's event keys and latest values, one per line (``runs show`` and ``runs get-event``)."""
    from ..events import event_values

    for key, value in event_values(run_id).items():
        print(f"  {key:24} {_json(value)}")


def cmd_runs_get_event(args: argparse.Namespace) -> int:
    from ..durations import to_seconds
    from ..errors import EventTimeout
    from ..events import event_values, get_event

    if args.key is None:
        if args.json:
            print(_json(event_values(args.run_id)))
        else:
            print_event_values(args.run_id)
        return 0
    try:
        value = get_event(args.run_id, args.key, timeout=args.timeout)
    except EventTimeout:
        if to_seconds(args.timeout, what="--timeout") > 0:
            raise
        raise EventTimeout(f"run {args.run_id} has not set event {args.key!r} yet (looked once; "
                           "--timeout 30s waits for it)") from None
    print(_json(value))
    return 0


def cmd_runs_stream(args: argparse.Namespace) -> int:
    from ..events import read_stream

    offset, pause = args.offset, 0.1
    while True:
        page = read_stream(args.run_id, offset)
        for n, value in enumerate(page.entries, start=offset):
            print(_json(value) if args.json else f"{n:6}  {_json(value)}", flush=True)
        offset = page.next_offset
        if not args.follow or page.ended:
            if not args.json:
                print(f"next offset {offset}" + ("; the run has ended (stream closed)" if page.ended else ""))
            return 0
        pause = 0.1 if page.entries else min(pause * 1.5, FOLLOW_POLL)
        time.sleep(pause)


def add_event_commands(runs: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``runs get-event`` and ``runs stream`` to the ``runs`` subcommands."""
    from .commands import _int_in

    p = add("get-event", cmd_runs_get_event,
            "print a run's event values (set_event); with KEY, that key's value as JSON: it looks once, or "
            "waits up to --timeout (unlike the Python get_event, whose default timeout=None waits without limit)",
            runs)
    p.add_argument("run_id")
    p.add_argument("key", nargs="?")
    p.add_argument("--timeout", default="0",
                   help="how long to wait for KEY to be set (e.g. 30s); default 0: look once, and exit 1 with "
                        "EventTimeout if it is not set yet")
    p.add_argument("--json", action="store_true", help="without KEY: every value as one JSON object")
    p = add("stream", cmd_runs_stream, "print a run's progress stream (write_stream) from an offset", runs)
    p.add_argument("run_id")
    p.add_argument("--offset", type=_int_in(0, 10**9), default=0)
    p.add_argument("--follow", action="store_true", help="keep reading until the run ends (the stream is closed)")
    p.add_argument("--json", action="store_true", help="only the entries, one JSON value a line")
