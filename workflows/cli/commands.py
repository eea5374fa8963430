"""The ``workflows`` command line (also ``python -m workflows``)."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import math
import sys
import textwrap
import time
from typing import Any, Callable, Sequence

from ..core.model.priority import LEVELS
from ..core.model.states import OpKind
from ..errors import ConfigurationError, WorkflowError
from .aws import add_aws_commands
from .batches import add_batch_commands
from .deferred import add_deferred_commands
from .events import add_event_commands, print_event_values
from .flow import add_flow_commands
from .forks import add_fork_commands
from .payloads import add_payload_commands
from .retention import add_retention_commands
from .schedules import add_schedule_commands
from .updates import add_update_commands

EXIT_ERROR = 1
EXIT_USAGE = 2


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _imports() -> None:
    from ..core.model.registry import load_imports
    from ..settings import get_settings

    for module in get_settings().imports:
        try:
            load_imports([module])
        except ImportError as exc:
            raise ConfigurationError(f"cannot import {module!r} (named in WORKFLOWS_IMPORTS): {exc}") from exc


def _int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an int in ``low..high``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in {low}..{high}, got {value}")
        return value
    return parse


class UsageError(Exception):
    """A bad command-line value found by a command: ``main`` prints it as one line and exits 2."""


def _clip(text: str) -> str:
    return text if len(text) <= 24 else text[:24] + "..."


def _json_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits())
        digits = len(text.lstrip("-"))
        raise ValueError(f"an integer of {digits} digits is over the limit of {sys.get_int_max_str_digits()}") from None


def _json_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {_clip(text)} is out of range")
    return value


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON data")


def parse_json_option(option: str, text: str, kind: type[list[Any]] | type[dict[str, Any]] | None = None) -> Any:
    """Parse the JSON value of a command-line option (``--args``, ``--kwargs``, ``--data``).

    Refuses, before anything is imported or stored, text that is not JSON, NaN and
    infinities, numbers out of a float's range, integers with more digits than Python
    converts, and nesting past the recursion limit; with ``kind``, a value of another type.

    Raises:
        UsageError: a one-line message naming ``option``.
    """
    try:
        value = json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant)
    except RecursionError:
        raise UsageError(f"{option} is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError included
        raise UsageError(f"{option} is not valid JSON: {exc}") from None
    if kind is not None and not isinstance(value, kind):
        raise UsageError(f"{option} must be a JSON {'list' if kind is list else 'object'}")
    return value


def _seconds(text: str) -> float:
    """An argparse type: a duration in seconds or like ``90s``."""
    from ..durations import to_seconds
    from ..errors import InvalidDuration

    try:
        return to_seconds(text)
    except InvalidDuration as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_init_aws(args: argparse.Namespace) -> int:
    _imports()  # first: the Celery app imports them too, and would fail with a traceback
    from beat.declared import sync_declared_schedules
    from persistence.blobs import ensure_bucket
    from persistence.provision import create_tables, ensure_ttl

    from ..celery.app import worker_queues
    from ..deploy.indexes import upgrade_indexes
    from ..deploy.queues import ensure_queues
    from ..deploy.resources import queue_specs
    from ..settings import get_settings

    settings = get_settings()
    changed = 0
    tables = [(name, "created" if created else "exists") for name, created in create_tables(settings)]
    tables += upgrade_indexes(settings)  # tables made by an earlier version: new or re-keyed indexes
    tables += [(f"{name} (TTL retain_until)", "updated") for name, enabled in ensure_ttl(settings) if enabled]
    bucket = [ensure_bucket(settings)]  # large payloads (docs/payloads.md), with its lifecycle rule
    for name, action in tables + ensure_queues(settings, queue_specs(worker_queues())) + bucket:
        changed += action != "exists"
        print(f"{action:7}  {name}")
    declared = sync_declared_schedules()
    if declared:
        print(f"declared schedules synced: {declared}")
    print("nothing to change: every table, queue and bucket exists" if not changed
          else f"{changed} resource(s) created or updated")
    return 0


def _celery(argv: list[str]) -> int:
    from click.exceptions import ClickException

    from ..celery.app import app

    try:
        return int(app.start(argv) or 0)
    except ClickException as exc:  # celery runs click with standalone_mode=False: it raises usage errors
        exc.show(file=sys.stderr)
        return int(exc.exit_code)


def cmd_worker(args: argparse.Namespace) -> int:
    _imports()
    extra = list(args.celery_args)
    if not any(a == "-Q" or a.startswith("--queues") for a in extra):
        from ..celery.app import worker_queues

        extra += ["-Q", ",".join(worker_queues())]
    return _celery(["worker", *extra])


def cmd_beat(args: argparse.Namespace) -> int:
    _imports()
    from beat.scheduler import WorkflowScheduler

    from ..celery.app import app

    app.conf.beat_scheduler = WorkflowScheduler
    return _celery(["beat", *args.celery_args])


def cmd_local_aws(args: argparse.Namespace) -> int:
    from ..local.server import serve_forever

    serve_forever(args.host, args.port, args.enforce_iam)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..local.demo import run_demo

    return run_demo(sleep_seconds=args.sleep)


def cmd_reconcile(args: argparse.Namespace) -> int:
    from ..core.background.sweeper import reconcile
    from ..runtime import get_engine

    _imports()
    print(f"recovered {reconcile(get_engine())} run(s)")
    return 0


def cmd_web(args: argparse.Namespace) -> int:
    from ..settings import get_settings

    if not get_settings().dashboard_token:
        raise ConfigurationError("the dashboard is off: set WORKFLOWS_DASHBOARD_TOKEN (16 bytes or more) to serve it")
    try:
        import uvicorn
    except ImportError:
        raise ConfigurationError("workflows web needs the 'web' extra: "
                                 "pip install 'celery-durable-workflows[web]'") from None
    from ..web import create_app, server_options

    uvicorn.run(create_app(), host=args.host, port=args.port, log_level="info", **server_options(get_settings()))
    return 0


def cmd_runs_list(args: argparse.Namespace) -> int:
    from ..client import list_runs
    from ..core.admission.deferral import current_deferral

    page = list_runs(status=args.status, workflow=args.workflow, limit=args.limit, cursor=args.cursor, tag=args.tag)
    print(f"{'RUN ID':38} {'WORKFLOW':20} {'STATUS':10} {'CREATED':26} TAGS")
    for run in page:
        tags = " ".join(f"{k}={v}" for k, v in sorted((run.tags or {}).items()))
        status = "deferred" if current_deferral(run) is not None else run.status  # see `runs deferred`
        print(f"{run.run_id:38} {run.workflow:20} {status:10} {_when(run.created_at):26} {tags}".rstrip())
    if page.next_cursor:
        print(f"next page: --cursor {page.next_cursor}")
    return 0


def cmd_runs_count(args: argparse.Namespace) -> int:
    from ..client import count_runs
    from ..options import TimeRange

    until = time.time() if args.until is None else args.until
    since = None if args.since is None else until - args.since
    for status, (count, capped) in count_runs(args.status, created=TimeRange(since, until), cap=args.cap).items():
        print(f"{status:10} {count}{'+' if capped else ''}")
    return 0


def cmd_runs_reindex(args: argparse.Namespace) -> int:
    from persistence.reindex import ListingKeys

    from ..settings import get_settings

    keys = ListingKeys(get_settings())
    print(f"listing keys set on {keys.reindex_runs()} run(s); {keys.reindex_tags()} tag item(s) moved to their shard")
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from ..client import get_run
    from ..core.admission.deferral import current_deferral, describe_deferral
    from ..core.model.failures import Failure, parse
    from ..core.model.records import RunStatus
    from ..core.ops.inbox import waiting_for
    from ..core.replay.children import ChildLink
    from ..core.storage.payloads import describe_payload
    from ..core.storage.retention import describe_expiry
    from ..runtime import get_engine
    from ..settings import get_settings

    handle = get_run(args.run_id)
    run = handle.record()
    print(f"run       {run.run_id}\nworkflow  {run.workflow}\nstatus    {run.status}")
    print(f"priority  {run.priority or 'normal'}")
    if (deferral := current_deferral(run)) is not None:
        print(f"deferred  {describe_deferral(deferral, time.time())}")
    print(f"created   {_when(run.created_at)}\nended     {_when(run.ended_at)}")
    print(f"expires   {describe_expiry(run, get_settings())}")
    if run.start_at is not None:
        print(f"starts    {_when(run.start_at)}" + (" (delayed)" if run.status == RunStatus.DELAYED else ""))
    failed = parse(run.result) if run.status == RunStatus.FAILED else None  # what the workflow raised
    forked = f"{run.forked_from} at op {run.forked_at}" if run.forked_from else None
    for label, value in (("version", run.code_version), ("forked from", forked),
                         ("parent", run.parent_run_id), ("continued from", run.continued_from),
                         ("continued to", run.continued_to), ("schedule", run.schedule_id),
                         ("tags", " ".join(f"{k}={v}" for k, v in sorted((run.tags or {}).items()))),
                         ("result", None if failed else describe_payload(run.result)), ("error", run.error)):
        if value:
            print(f"{label:9} {value}")
    if failed is not None:
        print("failure   " + failed.describe_chain().replace("\n", "\n          "))
    history = handle.history()
    children = [ChildLink.from_data(e.data) for e in history if e.kind == OpKind.CHILD and e.is_outcome]
    if children:
        print("children  " + ", ".join(child.describe() for child in children))
    # A run that continued: what waits is its chain's current run's (read there); else this history says.
    waiting = handle.waiting() if run.continued_to else waiting_for(get_engine().store, run, history)
    if waiting:
        print("\nwaiting (sent, not taken yet):")
        for item in waiting:
            payload = describe_payload(item.payload) or "null"
            print(f"  {item.kind:6} {item.name:24} {item.key}  sent {_when(item.sent_at)}  payload "
                  + (payload if len(payload) <= 200 else payload[:200] + "..."))
    print("\nevents:")
    print_event_values(run.run_id)
    print("\nsteps:")
    for row in handle.steps():
        took = (row["finished_at"] - row["started_at"]) if row["finished_at"] and row["started_at"] else None
        print(f"  #{row['seq']:<4} {row['name']:24} {row['status']:10} attempts={row['attempts']}"
              f" took={'-' if took is None else f'{took:.3f}s'}" + (f"  error={row['error']}" if row["error"] else ""))
        if row.get("failure"):  # the exception's chain and tracebacks (core.model.failures)
            print(textwrap.indent(Failure.from_dict(row["failure"]).describe_chain(), "        "))
    print("\ntimeline:")
    _print_events(handle.events())
    return 0


def _print_events(events: list[dict[str, Any]]) -> None:
    for event in events:
        detail = {k: v for k, v in event.items() if k not in ("seq", "at", "type", "pos") and v is not None}
        print(f"  {_when(event.get('at'))}  {event['type']:22} {json.dumps(detail, default=str)}")


def cmd_runs_events(args: argparse.Namespace) -> int:
    from ..client import get_run

    events = get_run(args.run_id).events()
    if args.json:
        print(json.dumps(events, default=str, indent=2))
    else:
        _print_events(events)
    return 0


def _tag_option(text: str) -> tuple[str, str]:
    """An argparse type: ``KEY=VALUE``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def cmd_runs_start(args: argparse.Namespace) -> int:
    from ..client import apply_async

    positional = parse_json_option("--args", args.args, list)
    keywords = parse_json_option("--kwargs", args.kwargs, dict)
    _imports()
    run = apply_async(args.workflow, positional, keywords, idempotency_key=args.key,
                      tags=dict(args.tag) if args.tag else None, priority=args.priority, delay=args.delay,
                      start_at=args.start_at)
    print(run.run_id)
    return 0


def _moment_option(text: str) -> dt.datetime:
    """An argparse type: an ISO 8601 date and time with its offset (``2027-01-15T09:00:00Z``)."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time like 2027-01-15T09:00:00Z, got {text!r}") \
            from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the time's offset (Z or +01:00): {text!r}")
    return moment


def cmd_runs_export(args: argparse.Namespace) -> int:
    from ..client import get_run
    from ..export import export_run
    from ..runtime import get_engine

    get_run(args.run_id)
    text = json.dumps(export_run(get_engine().store, args.run_id, get_engine().payloads), indent=2) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        print(f"run {args.run_id} exported to {args.output}", file=sys.stderr)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from ..errors import NonDeterminismError, SuspensionSwallowed
    from ..testing.replayer import replay

    _imports()
    failed = 0
    for path in args.files:
        try:
            report = replay(path)
        except (NonDeterminismError, SuspensionSwallowed) as exc:
            failed += 1
            print(f"FAIL  {path}: {type(exc).__name__}: {exc}")
            continue
        print(f"ok    {path}: run {report.run_id} ({report.workflow}, {report.status}): "
              f"{report.ops} op(s) replayed, {report.ending}")
    return EXIT_ERROR if failed else 0


def cmd_runs_cancel(args: argparse.Namespace) -> int:
    from ..client import cancel

    cancel(args.run_id)
    print(f"cancellation requested for {args.run_id}")
    return 0


def cmd_runs_signal(args: argparse.Namespace) -> int:
    from ..client import send_signal

    payload = parse_json_option("--data", args.data)
    send_signal(args.run_id, args.name, payload)
    print(f"signal {args.name!r} sent to {args.run_id}")
    return 0


def cmd_hooks_complete(args: argparse.Namespace) -> int:
    from ..client import resume_hook

    payload = parse_json_option("--data", args.data)
    _imports()
    run = resume_hook(args.token, payload)
    print(f"hook resumed; run {run.run_id}")
    return 0


def cmd_hooks_list(args: argparse.Namespace) -> int:
    from ..client import get_run
    from ..runtime import get_engine

    get_run(args.run)
    print(f"{'POS':5} {'NAME':20} {'STATUS':9} {'EXPIRES':24} TOKEN HASH (prefix)")
    for hook in get_engine().store.hooks_for_run(args.run):
        print(f"{hook.pos:<5} {hook.name:20} {hook.status:9} {_when(hook.expires_at):24} {hook.token_hash[:12]}")
    return 0


def cmd_dlq_list(args: argparse.Namespace) -> int:
    from ..celery.deadletter import list_dead_letters

    letters = list_dead_letters(args.limit)
    for letter in letters:
        print(json.dumps(letter, default=str))
    print(f"{len(letters)} dead letter(s) shown")
    return 0


def cmd_dlq_purge(args: argparse.Namespace) -> int:
    from ..celery.deadletter import purge_dead_letters

    purge_dead_letters()
    print("dead-letter queue purged")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    from ..client import STATUSES

    parser = argparse.ArgumentParser(prog="workflows", description="Durable workflows on Celery, SQS and DynamoDB.")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_: str,
            parent: Any = sub) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = parent.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=fn)
        return p

    add("init-aws", cmd_init_aws, "create every table and queue and the payload bucket (idempotent)")
    for name, fn, text in (("worker", cmd_worker, "run a Celery worker (extra args go to celery)"),
                           ("beat", cmd_beat, "run beat with the DynamoDB scheduler (timers, schedules, recovery)")):
        add(name, fn, text).add_argument("celery_args", nargs=argparse.REMAINDER)
    p = add("local-aws", cmd_local_aws, "run the local AWS emulator in the foreground")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_int_in(1, 65535), default=5000)
    p.add_argument("--enforce-iam", action="store_true",
                   help="enforce IAM policies (tests of the generated policies); see docs/aws.md")
    p = add("demo", cmd_demo, "run an example workflow end to end on an embedded local stack")
    p.add_argument("--sleep", type=_seconds, default=3.0, help="seconds of the demo's durable sleep")
    p = add("web", cmd_web, "serve the web dashboard and the hook endpoint (needs WORKFLOWS_DASHBOARD_TOKEN)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_int_in(1, 65535), default=8000)
    add("reconcile", cmd_reconcile, "resume runs whose lease expired (beat also does this)")

    runs = add("runs", lambda a: EXIT_USAGE, "start, inspect and cancel runs").add_subparsers(
        dest="runs_cmd", required=True)
    p = add("list", cmd_runs_list, "list runs, newest first", runs)
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--workflow")
    p.add_argument("--tag", metavar="KEY=VALUE", help="only runs carrying this tag (not with --status)")
    p.add_argument("--limit", type=_int_in(1, 1000), default=20)
    p.add_argument("--cursor")
    p = add("count", cmd_runs_count, "count runs by status (Select COUNT Queries of each status's index shards)", runs)
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--since", type=_seconds, help="only runs created this long ago or later (e.g. 24h)")
    p.add_argument("--until", type=float, help="only runs created at or before these epoch seconds")
    p.add_argument("--cap", type=_int_in(1, 1_000_000), default=10_000, help="stop counting a status here")
    add("reindex", cmd_runs_reindex,
        "set the listing index keys on runs stored without them, move unsharded tag items (a Scan of each)", runs)
    add("show", cmd_runs_show, "show a run, what waits for it (signals, update requests), its steps and its timeline",
        runs).add_argument("run_id")
    p = add("events", cmd_runs_events, "print a run's history", runs)
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")
    add("cancel", cmd_runs_cancel, "cancel a run", runs).add_argument("run_id")
    p = add("signal", cmd_runs_signal, "send a signal to a run (its wait_for_signal(name) receives it)", runs)
    p.add_argument("run_id")
    p.add_argument("name")
    p.add_argument("--data", default="null", help="the payload, as JSON")
    p = add("export", cmd_runs_export, "write a run and its history as JSON, for 'workflows replay'", runs)
    p.add_argument("run_id")
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    p = add("start", cmd_runs_start, "start a run of a registered workflow; prints its id", runs)
    p.add_argument("workflow")
    p.add_argument("--args", default="[]", help="positional arguments, a JSON list")
    p.add_argument("--kwargs", default="{}", help="keyword arguments, a JSON object")
    p.add_argument("--key", help="idempotency key: the same key returns the same run")
    p.add_argument("--tag", action="append", type=_tag_option, metavar="KEY=VALUE",
                   help="a tag of the run (repeatable); find runs by it with 'runs list --tag'")
    p.add_argument("--priority", choices=LEVELS,
                   help="the level the run is served at (default: the workflow's, else normal)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--delay", metavar="DURATION",
                      help="start the run this long from now ('10m', '2h', seconds); listed as delayed until then")
    when.add_argument("--start-at", type=_moment_option, metavar="TIME",
                      help="start the run at this time (ISO 8601 with its offset, e.g. 2027-01-15T09:00:00Z)")
    add_fork_commands(runs, add)
    add_event_commands(runs, add)
    add_update_commands(runs, add)
    add_deferred_commands(runs, add)

    hooks = add("hooks", lambda a: EXIT_USAGE, "resume and list hooks").add_subparsers(dest="hooks_cmd", required=True)
    p = add("resume", cmd_hooks_complete, "resume a hook with a JSON payload", hooks)
    p.add_argument("token")
    p.add_argument("--data", default="null", help="the payload, as JSON")
    add("list", cmd_hooks_list, "list a run's hooks", hooks).add_argument("--run", required=True)

    dlq = add("dlq", lambda a: EXIT_USAGE, "poison messages set aside").add_subparsers(dest="dlq_cmd", required=True)
    add("list", cmd_dlq_list, "show dead letters (they stay queued)", dlq).add_argument(
        "--limit", type=_int_in(1, 1000), default=20)
    add("purge", cmd_dlq_purge, "delete every dead letter", dlq)
    p = add("replay", cmd_replay, "replay exported runs against the current code; exit 1 on non-determinism")
    p.add_argument("files", nargs="+", metavar="FILE")
    add_schedule_commands(sub, add)
    add_aws_commands(sub, add)
    add_flow_commands(sub, add)
    add_payload_commands(sub, add)
    add_retention_commands(sub, add)
    add_batch_commands(sub, add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate an older version stored prints escaped
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    if argv and argv[0] in ("worker", "beat") and not ({"-h", "--help"} & set(argv[1:2])):
        # Everything after the command belongs to celery, options included.
        args = parser.parse_args(argv[:1])
        args.celery_args = argv[1:]
    else:
        args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WorkflowError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
