"""``python -m bench [--quick]``: speed and AWS cost per step, this library vs plain Celery vs pyworkflow-engine.

Starts its own stack (moto behind a counting front, real worker processes), runs
every scenario on each system in turn, prints the tables and writes them as JSON
under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from . import report
from .scenarios import FULL, QUICK, Result, run_system
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
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about 2 minutes)")
    parser.add_argument("--skip-peer", action="store_true", help="leave pyworkflow-engine out")
    parser.add_argument("--only", choices=("workflows", "workflows-sent", "celery", "pyworkflow"), action="append",
                        help="run only these systems (repeatable)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes per system (default 1)")
    parser.add_argument("--concurrency", type=int, default=4, help="threads per worker (default 4)")
    parser.add_argument("--poll", type=int, default=1, help="SQS long-poll wait, seconds, every system (default 1)")
    parser.add_argument("--sweep", type=float, default=5.0, help="beat sweep interval, seconds (default 5)")
    parser.add_argument("--profile", action="store_true",
                        help="record this library's worker with py-spy during each scenario (results/profiles/)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes (default bench/results)")
    return parser.parse_args(argv)


def build_systems(args: argparse.Namespace) -> list[Any]:
    from .systems import PlainCelery, Workflows

    wanted = args.only or ["workflows", "workflows-sent", "celery", "pyworkflow"]
    systems: list[Any] = []
    if "workflows" in wanted:
        systems.append(Workflows(args.workers, args.concurrency))
    if "workflows-sent" in wanted:
        systems.append(Workflows(args.workers, args.concurrency, in_place=False))
    if "celery" in wanted:
        systems.append(PlainCelery(args.workers, args.concurrency))
    if "pyworkflow" in wanted and not args.skip_peer:
        systems.append("pyworkflow")  # its virtualenv is prepared when its turn comes
    return systems


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
    yield lambda scenario: record(py_spy(), pids, outdir / scenario)
    from .profile import breakdown

    for path in sorted(outdir.glob("*.txt")):
        log(f"profile {path.name}: busy worker samples by engine frame\n" + "\n".join(breakdown(path, 8)))


def run(args: argparse.Namespace) -> tuple[list[Result], dict[str, Any]]:
    plan = QUICK if args.quick else FULL
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    logdir = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    settings = (f"SQS long-poll wait {args.poll}s (all systems), beat sweep {args.sweep:g}s, "
                f"{args.workers} worker process(es) x {args.concurrency} threads per system, "
                f"sizes {'--quick' if args.quick else 'full'}: {plan}")
    meta = {"machine": machine(), "settings": settings, "versions": versions(), "started": stamp, "commit": commit(),
            "command": "python -m bench" + (" --quick" if args.quick else "")}
    log(f"logs in {logdir}")
    front = Front(logdir)
    results: list[Result] = []
    try:
        from .systems import Workflows

        os.environ.update(Workflows.env(front, "client", args.sweep, args.poll))
        os.environ["BASELINE_PREFIX"] = "celb-"
        from workflows.settings import Settings, configure

        configure(Settings.from_env())
        for system in build_systems(args):
            began = time.monotonic()
            try:
                system = peer_system(args) if system == "pyworkflow" else system
            except Exception as exc:
                log(f"pyworkflow-engine could not be installed: {exc}")
                results += [Result(s, "pyworkflow", 0, 0, error=f"install failed: {exc}")
                            for s in ("sequential", "sequential-inline", *(f"fan-out-{w}" for w in plan.widths))]
                continue
            log(f"{system.label}: starting workers")
            with Cluster(logdir) as cluster:
                try:
                    system.start(front, cluster, args.sweep, args.poll)
                except Exception as exc:
                    log(f"{system.label} did not start: {exc}")
                    results.append(Result("start", system.name, 0, 0, error=f"did not start: {exc}"))
                    continue
                with profiling(args, system, cluster, stamp) as wrap:
                    results += run_system(front, cluster, system, plan, log, wrap)
                cluster.check()
            log(f"{system.label}: done in {time.monotonic() - began:.0f}s")
    finally:
        front.stop()
    meta["seconds"] = f"{time.monotonic() - _START:.1f}"
    return results, meta


_START = time.monotonic()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results, meta = run(args)
    text = report.render(results, meta)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench-{meta['started']}{'-quick' if args.quick else ''}.json"
    payload = {"meta": meta, "results": [r.to_json() for r in results], "targets": report.targets(results),
               "figures": [{"scenario": r.scenario, "system": r.system, **{k: v for k, v in report.figures(r).items()}}
                           for r in results], "markdown": text}
    path.write_text(json.dumps(payload, indent=1, default=str))
    log(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path} "
        f"in {meta['seconds']}s total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
