"""``workflows batch ...``: cancel, signal, rerun or tag the runs a filter selects; follow, list, stop batches."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

from ..core.model.batches import BatchRecord


def _filter(args: argparse.Namespace) -> Any:
    from ..options import RunFilter, TimeRange

    created = None
    if args.since is not None or args.until is not None:
        created = TimeRange(since=None if args.since is None else time.time() - args.since, until=args.until)
    return RunFilter(status=args.status, workflow=args.workflow, tag=args.tag, created=created)


def _line(batch: BatchRecord) -> str:
    counts = " ".join(f"{k} {v}" for k, v in batch.counts().items())
    return f"{batch.batch_id}  {batch.operation:6} {batch.state:9} {counts}  ({batch.selection.describe()})"


def print_batch(batch: BatchRecord, as_json: bool = False) -> None:
    """A batch: its operation, filter, state, rate, counts and latest failures."""
    if as_json:
        print(json.dumps(batch.to_dict(), default=str))
        return
    print(f"batch      {batch.batch_id}")
    print(f"operation  {batch.operation} {json.dumps(batch.params, default=str) if batch.params else ''}".rstrip())
    print(f"filter     {batch.selection.describe()}")
    print(f"state      {batch.state}   rate {batch.rate:g} runs/s")
    if batch.stalled:
        wait = max(0.0, (batch.due_at or 0.0) - time.time())
        retry = f" ({batch.stalls} chunk(s) in a row failed; tried again in {wait:.0f} s)" if batch.is_live else ""
        print(f"error      {batch.stalled}{retry}")
    print("progress   " + "  ".join(f"{k} {v}" for k, v in batch.counts().items()))
    for run_id, error in batch.errors:
        print(f"  failed   {run_id}: {error}")


def _drive(batch_id: str, as_json: bool) -> int:
    """Drive the batch here: a progress line per chunk (``as_json``: the batch after it, one JSON
    line), then the batch as it ended (``as_json``: its JSON, the last line)."""
    from ..batches import drive_batch

    def report(batch: BatchRecord) -> None:
        print(json.dumps(batch.to_dict(), default=str) if as_json else _line(batch), flush=True)

    print_batch(drive_batch(batch_id, on_chunk=report), as_json)
    return 0


def cmd_batch_start(args: argparse.Namespace) -> int:
    from ..batches import start_batch
    from .commands import _imports, parse_json_option

    params: dict[str, Any] = {}
    if args.operation == "cancel":
        params["reason"] = args.reason
    elif args.operation == "signal":
        params = {"name": args.name, "payload": parse_json_option("--data", args.data)}
    elif args.operation == "tag":
        params["tags"] = {key: (None if value == "" else value) for key, value in args.set}
    _imports()  # a rerun forks runs of these workflows
    batch_id = start_batch(args.operation, _filter(args), rate=args.rate, **params)
    if args.follow:
        return _drive(batch_id, args.json)
    print(batch_id)
    return 0


def cmd_batch_run(args: argparse.Namespace) -> int:
    from .commands import _imports

    _imports()
    return _drive(args.batch_id, args.json)


def cmd_batch_show(args: argparse.Namespace) -> int:
    from ..batches import get_batch

    print_batch(get_batch(args.batch_id), args.json)
    return 0


def cmd_batch_list(args: argparse.Namespace) -> int:
    from ..batches import list_batches

    batches = list_batches(args.limit, before=args.before)
    if args.json:
        print(json.dumps([b.to_dict() for b in batches], default=str))
    for batch in [] if args.json else batches:
        print(_line(batch))
    if batches and len(batches) == args.limit and not args.json:
        print(f"next page: --before {batches[-1].batch_id}")
    return 0


def cmd_batch_stop(args: argparse.Namespace) -> int:
    from ..batches import stop_batch

    print_batch(stop_batch(args.batch_id), args.json)
    return 0


def add_batch_commands(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``workflows batch cancel|signal|rerun|tag|run|show|list|stop``."""
    from ..client import STATUSES
    from .commands import _int_in, _seconds, _tag_option

    batch = add("batch", lambda a: 2, "act on the runs a filter selects, throttled (docs/guide.md)", sub)
    cmds = batch.add_subparsers(dest="batch_cmd", required=True)
    for operation, text in (("cancel", "cancel the runs a filter selects (ended runs are skipped)"),
                            ("signal", "send a signal to the runs a filter selects"),
                            ("rerun", "rerun each failed run a filter selects from its failed step, once"),
                            ("tag", "set tags on the ended runs a filter selects (live runs are skipped)")):
        p = add(operation, cmd_batch_start, text + "; prints the batch id", cmds)
        p.set_defaults(operation=operation)
        if operation == "signal":
            p.add_argument("name")
            p.add_argument("--data", default="null", help="the payload, as JSON")
        if operation == "cancel":
            p.add_argument("--reason", help="why (kept on the batch)")
        if operation == "tag":
            p.add_argument("--set", action="append", type=_tag_option, metavar="KEY=VALUE", required=True,
                           help="a tag to set (repeatable; KEY= removes KEY)")
        p.add_argument("--status", choices=STATUSES)
        p.add_argument("--workflow")
        p.add_argument("--tag", metavar="KEY=VALUE", help="only runs carrying this tag (not with --status)")
        p.add_argument("--since", type=_seconds, help="only runs created this long ago or later (e.g. 24h)")
        p.add_argument("--until", type=float, help="only runs created at or before these epoch seconds")
        p.add_argument("--rate", type=float, help="runs per second (default WORKFLOWS_BATCH_RATE)")
        p.add_argument("--follow", action="store_true",
                       help="drive the batch here until it ends, printing its progress (beat drives it otherwise)")
        p.add_argument("--json", action="store_true",
                       help="the batch as JSON (with --follow: one JSON line per chunk, then the batch)")
    p = add("run", cmd_batch_run, "drive a batch here until it ends, printing its progress", cmds)
    p.add_argument("batch_id")
    p.add_argument("--json", action="store_true", help="one JSON line per chunk, then the batch as JSON")
    for name, fn, text in (("show", cmd_batch_show, "a batch's operation, filter, state and progress"),
                           ("stop", cmd_batch_stop, "stop a batch (no further chunk starts)")):
        p = add(name, fn, text, cmds)
        p.add_argument("batch_id")
        p.add_argument("--json", action="store_true")
    p = add("list", cmd_batch_list, "the newest batches, live and ended", cmds)
    p.add_argument("--limit", type=_int_in(1, 1000), default=20)
    p.add_argument("--before", metavar="BATCH_ID", help="the next page: batches older than this one")
    p.add_argument("--json", action="store_true")
