"""``python -m bench [--quick]``: speed and AWS cost per step, this library vs plain Celery vs pyworkflow-engine.

Starts its own stack (moto behind a counting front, real worker processes), runs
each latency scenario several times with the systems taking turns
(:mod:`bench.session`), prints the tables and writes them, with every repeat's
raw figures, as JSON under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from . import aws_latency, columns, engine_targets, report, targets
from .scenarios import FULL, QUICK, Plan, Result
from .session import Session, latency_rounds, once_turns, run_peer
from .stack import Cluster, Front

RESULTS = Path(__file__).resolve().parent / "results"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), model)
    return f"{os.cpu_count()} cores (nproc), {model}, {platform.system()} {platform.release()}, " \
           f"Python {platform.python_version()}"


def commit() -> str:
    """The measured tree: its commit, marked when it had uncommitted changes outside bench/."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=RESULTS.parent, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench"],
                               capture_output=True, text=True, cwd=RESULTS.parents[1], timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}" if head else "unknown"


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("celery", "kombu", "boto3", "pynamodb", "moto"):
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about 10 minutes)")
    parser.add_argument("--repeats", type=int, help="runs of each latency scenario (default 3, --quick 2)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="change one size of the plan, e.g. --set seq_runs=3 --set history=100,500 "
                             "--set prefork=1 --set wide=0 --set fresh=0, or one AWS latency in ms, e.g. "
                             "--set aws.dynamodb.GetItem=8 (repeatable)")
    parser.add_argument("--aws-latency", choices=("both", "moto", "aws"), default="both",
                        help="columns of the repeated scenarios: moto as it is, moto plus AWS's published latency "
                             "per operation (bench/aws_latency.py), or both side by side (default)")
    parser.add_argument("--skip-peer", action="store_true", help="leave pyworkflow-engine out")
    parser.add_argument("--only", choices=("workflows", "workflows-sent", "celery", "pyworkflow"), action="append",
                        help="run only these systems (repeatable)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes per system (default 1)")
    parser.add_argument("--concurrency", type=int, default=4, help="threads per worker (default 4)")
    parser.add_argument("--poll", type=int, default=1, help="SQS long-poll wait, seconds, every system (default 1)")
    parser.add_argument("--sweep", type=float, default=5.0, help="beat sweep interval, seconds (default 5)")
    parser.add_argument("--profile", action="store_true",
                        help="record this library's worker with py-spy during each scenario (results/profiles/)")
    parser.add_argument("--idle", action="store_true",
                        help="with --profile: sample waiting threads too (py-spy --idle), and print where a run's "
                             "time goes: waiting for an AWS response or running, by engine frame")
    parser.add_argument("--keep-idle", action="store_true",
                        help="leave the other systems' workers running idle during a turn instead of pausing them "
                             "(their requests are counted in each window's other_requests)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes (default bench/results)")
    parser.add_argument("--report", type=Path, metavar="RESULTS.json",
                        help="print the tables of a saved run (this code's tables over its measurements); run nothing")
    return parser.parse_args(argv)


def plan_of(args: argparse.Namespace) -> Plan:
    """The sizes: full or quick, then ``--repeats`` and every ``--set FIELD=VALUE``."""
    plan = QUICK if args.quick else FULL
    changes: dict[str, Any] = {} if args.repeats is None else {"repeats": args.repeats}
    fields = {f.name: f for f in dataclasses.fields(Plan)}
    for item in aws_latency.overrides(args.set)[1]:
        name, _, value = item.partition("=")
        if name not in fields:
            raise SystemExit(f"--set {item}: no size {name!r}; sizes: {', '.join(fields)}")
        current = getattr(plan, name)
        if isinstance(current, bool):
            changes[name] = value.lower() not in ("0", "false", "no", "off", "")
        elif isinstance(current, tuple):
            changes[name] = tuple(int(v) for v in value.split(",") if v)
        elif name == "wide":
            changes[name] = int(value) or None
        else:
            changes[name] = type(current)(value)
    return dataclasses.replace(plan, **changes)


def columns_of(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The columns of the repeated scenarios: name -> the latency the front adds (ms per operation)."""
    aws = aws_latency.table(aws_latency.overrides(args.set)[0])
    return {"moto": {}, "aws": aws} if args.aws_latency == "both" else {args.aws_latency: {} if
                                                                        args.aws_latency == "moto" else aws}


def wanted(args: argparse.Namespace) -> list[str]:
    return args.only or ["workflows", "workflows-sent", "celery", "pyworkflow"]


def threads_systems(args: argparse.Namespace) -> list[Any]:
    """The systems of the threads-pool phase (the bench's default pool)."""
    from .systems import PlainCelery, Workflows

    systems: list[Any] = []
    if "workflows" in wanted(args):
        systems.append(Workflows(args.workers, args.concurrency))
    if "workflows-sent" in wanted(args):
        systems.append(Workflows(args.workers, args.concurrency, in_place=False))
    if "celery" in wanted(args):
        systems.append(PlainCelery(args.workers, args.concurrency))
    return systems


def prefork_systems(args: argparse.Namespace, processes: int) -> list[Any]:
    """One worker of ``processes`` prefork pool processes, for this library and for plain Celery."""
    from .systems import PlainCelery, Workflows

    return ([Workflows(1, processes, pool="prefork")] if "workflows" in wanted(args) else []) + \
        ([PlainCelery(1, processes, pool="prefork")] if "celery" in wanted(args) else [])


def peer_system(args: argparse.Namespace) -> Any:
    from .peer import bench_python
    from .systems import PyWorkflow

    return PyWorkflow(bench_python(log), args.concurrency)


@contextlib.contextmanager
def profiling(args: argparse.Namespace, system: Any, cluster: Cluster, stamp: str) -> Iterator[Any]:
    """A per-scenario py-spy wrapper for this library's workers, or None."""
    if not args.profile or system.name != "workflows":
        yield None
        return
    from .peer import bench_python, py_spy
    from .profile import record

    bench_python(log)
    outdir = args.out / "profiles" / stamp
    outdir.mkdir(parents=True, exist_ok=True)
    pids = [p.popen.pid for p in cluster.procs if p.name.startswith("wf-worker")]
    yield lambda scenario: record(py_spy(), pids, outdir / scenario, idle=args.idle)
    from .profile import breakdown, waits

    for path in sorted(p for p in outdir.glob("*.txt") if any(p.name.endswith(f"-{pid}.txt") for pid in pids)):
        log(f"profile {path.name}: busy worker samples by engine frame\n" + "\n".join(breakdown(path, 8)))
        if args.idle:
            log(f"profile {path.name}: task threads' samples, waiting or running\n" + "\n".join(waits(path, 12)))


def run(args: argparse.Namespace) -> tuple[list[Result], dict[str, Any]]:
    plan = plan_of(args)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    logdir = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    settings = (f"SQS long-poll wait {args.poll}s (all systems), beat sweep {args.sweep:g}s, "
                f"{args.workers} worker process(es) x {args.concurrency} threads per system (prefork: one worker "
                f"of {', '.join(map(str, plan.prefork))} processes), each latency scenario {plan.repeats} times "
                f"in alternating order, "
                f"sizes {'--quick' if args.quick else 'full'}: {plan}")
    phases: dict[str, float] = {}
    measured_in = columns_of(args)
    settings += (f"; columns: {', '.join(measured_in)}" + (" (AWS latency added outside the DynamoDB turn-taking)"
                                                             if "aws" in measured_in else "")
                 + ("; the system's growing tables emptied before each window" if plan.fresh else ""))
    meta: dict[str, Any] = {"machine": machine(), "settings": settings, "versions": versions(), "started": stamp,
                            "commit": commit(), "command": "python -m bench " + " ".join(sys.argv[1:]),
                            "plan": dataclasses.asdict(plan), "phases": phases, "columns": measured_in}
    log(f"logs in {logdir}")
    front = Front(logdir)
    results: list[Result] = []
    try:
        from .systems import Workflows

        os.environ.update(Workflows.env(front, "client", args.sweep, args.poll))
        os.environ["BASELINE_PREFIX"] = "celb-"
        from workflows.settings import Settings, configure

        configure(Settings.from_env())

        @contextlib.contextmanager
        def phase(name: str, systems: list[Any], pool: str, processes: int) -> Iterator[Session]:
            with Session(front, plan, logdir, log, args.sweep, args.poll, args.keep_idle, results,
                         measured_in) as session:
                for system in systems:
                    wrap = None if system.name != "workflows" else (
                        lambda cluster, system=system: profiling(args, system, cluster, stamp))
                    session.start(system, pool, processes, wrap)
                yield session
            lap(name)

        last = [time.monotonic()]

        def lap(name: str) -> None:
            """Seconds since the previous lap, under ``name`` (phases nest: each part is timed once)."""
            now = time.monotonic()
            phases[name] = round(now - last[0], 1)
            last[0] = now
            log(f"{name}: done in {phases[name]:.0f}s")

        # The threads systems stay up (paused) through the prefork phases, whose tables then hold only
        # the repeated scenarios' items (moto's Queries slow down as tables grow); the long runs come last.
        with phase("threads: stop", threads_systems(args), "threads", args.workers) as threads:
            for turns in latency_rounds(plan):
                threads.rounds(turns, plan.repeats)
            threads.pause_all()
            lap("threads: start and repeated scenarios")
            for n in plan.prefork:
                with phase(f"prefork-{n}", prefork_systems(args, n), "prefork", n) as prefork:
                    for turns in latency_rounds(plan, prefork=True):
                        prefork.rounds(turns, plan.repeats)
            threads.rounds(once_turns(plan), 1, ("moto",) if "moto" in measured_in else None)
            lap("threads: long runs")
        if "pyworkflow" in wanted(args) and not args.skip_peer:
            try:
                peer = peer_system(args)
            except Exception as exc:
                log(f"pyworkflow-engine could not be installed: {exc}")
                results.append(Result("start", "pyworkflow", 0, 0, error=f"install failed: {exc}"))
            else:
                with phase("pyworkflow", [peer], "threads", 1) as session:
                    run_peer(session, plan)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: every process was stopped on the way out; keep what was measured
        meta["interrupted"] = f"after {time.monotonic() - _START:.0f}s"
        log(f"interrupted: reporting the {len(results)} measurements taken")
    finally:
        front.stop()
    meta["seconds"] = f"{time.monotonic() - _START:.1f}"
    return results, meta


_START = time.monotonic()


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: the worker processes and the AWS front are stopped, not left running."""
    raise KeyboardInterrupt


def render(results: list[Result], meta: dict[str, Any]) -> tuple[str, list[Any], list[Any]]:
    """The report (Markdown), the targets rows and issue 26's rows of ``results``."""
    first = next(iter(columns.split(results).values()))  # moto's column, unless only the AWS one was measured
    goals = targets.targets(first)
    engine = engine_targets.engine_targets(results)
    extra = ["### Issue 26, targets 3-5, both columns", engine_targets.engine_targets_table(engine),
             "### Both columns side by side (medians of alternating repeats)", columns.side_by_side(results),
             "### Where the DynamoDB time of a window went", columns.waits_table(results)]
    return report.render(first, meta, targets.targets_table(goals), extra), goals, engine


def load(path: Path) -> tuple[list[Result], dict[str, Any]]:
    """The results and meta of a saved run (``--report``)."""
    from .systems import Timing

    data = json.loads(path.read_text())
    results = []
    for raw in data["results"]:
        fields = {k: v for k, v in raw.items() if k in {f.name for f in dataclasses.fields(Result)}}
        results.append(Result(**{**fields, "timing": Timing(**raw["timing"])}))
    return results, data["meta"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:  # the tables of a saved run, rendered again by this code
        results, meta = load(args.report)
        print(render(results, meta)[0])
        return 0
    signal.signal(signal.SIGTERM, interrupt)
    results, meta = run(args)
    text, goals, engine = render(results, meta)
    by_column = columns.split(results)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench-{meta['started']}{'-quick' if args.quick else ''}.json"
    payload = {"meta": meta, "results": [r.to_json() for r in results], "targets": goals, "engine_targets": engine,
               "figures": [{"scenario": r.scenario, "system": r.system, "pool": r.pool, "processes": r.processes,
                            "repeat": r.repeat, "column": r.column, **report.figures(r)} for r in results],
               "summary": {column: report.summary(rs) for column, rs in by_column.items()}, "markdown": text}
    path.write_text(json.dumps(payload, indent=1, default=str))
    log(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
        f"in {meta['seconds']}s total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
