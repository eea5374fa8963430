"""``python -m bench.priority [--backlog 10000] [--high 20]``: the latency of high-priority runs
under a backlog of low-priority work.

The workers are paused (SIGSTOP) while ``--backlog`` low-priority runs of a one-step workflow are
started, so their resumes wait in the ``workflows-low`` queue; the workers go on, and ``--high``
runs with ``priority="high"`` are started one after another while the backlog drains. It prints
the high runs' p50 and p95 (start to end, stored times) and how long the backlog took to drain.
``--baseline`` measures one run of normal priority behind a backlog of normal priority too
(what a single FIFO queue gives). Workers import this module (``WORKFLOWS_IMPORTS=bench.priority``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows import step, workflow

POLL = 0.02


@step
def prio_touch(i: int) -> int:
    """The work of one run: a step sent as a message (a few milliseconds of a worker thread)."""
    return i


@workflow
def prio_one(i: int) -> int:
    """One step: a resume, the step, the end."""
    return prio_touch(i)


def _start_backlog(count: int, priority: str) -> list[Any]:
    return [prio_one.options(priority=priority).start(i) for i in range(count)]


def _latency(handle: Any, timeout: float) -> float:
    handle.result(timeout=timeout, poll=POLL)
    record = handle.record()
    return float(record.ended_at) - float(record.created_at)


def _done(handles: list[Any]) -> bool:
    from workflows.core.model.records import RunStatus

    return handles[-1].status() == RunStatus.COMPLETED.value


def measure(cluster: Any, backlog: int, high: int, priority: str, probe: str, timeout: float) -> dict[str, Any]:
    """Pause the workers, queue ``backlog`` runs at ``priority``, let the workers go, and time ``high``
    runs at ``probe`` started one after another; then wait for the backlog to drain."""
    cluster.pause()
    began = time.monotonic()
    handles = _start_backlog(backlog, priority)
    queued = time.monotonic() - began
    cluster.resume()
    released = time.monotonic()
    latencies = [_latency(prio_one.options(priority=probe).start(-1 - i), timeout) for i in range(high)]
    print(f"{probe} runs behind {backlog} {priority} runs: p50 {statistics.median(latencies):.3f} s "
          "(the backlog still draining)", flush=True)
    while not _done(handles) and time.monotonic() - released < timeout:
        time.sleep(0.5)
    return {"backlog": backlog, "backlog_priority": priority, "probe_priority": probe, "probes": high,
            "p50": statistics.median(latencies), "p95": sorted(latencies)[max(0, int(0.95 * len(latencies)) - 1)],
            "max": max(latencies), "queued_in_s": round(queued, 1),
            "drained_in_s": round(time.monotonic() - released, 1), "drained": _done(handles)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.priority", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backlog", type=int, default=10_000, help="low-priority runs queued (default 10,000)")
    parser.add_argument("--high", type=int, default=20, help="high-priority runs timed (default 20)")
    parser.add_argument("--concurrency", type=int, default=4, help="threads of the one worker (default 4)")
    parser.add_argument("--baseline", action="store_true", help="also time a normal run behind a normal backlog")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from .stack import Cluster, Front

    logdir = Path(tempfile.mkdtemp(prefix="bench-priority-"))
    front = Front(logdir)
    env = {**front.env("worker"), "WORKFLOWS_TABLE_PREFIX": "wfp-", "WORKFLOWS_QUEUE_PREFIX": "wfp-",
           "WORKFLOWS_IMPORTS": "bench.priority", "WORKFLOWS_POLL_WAIT_SECONDS": "1"}
    figures: list[dict[str, Any]] = []
    try:
        os.environ.update({**env, **front.env("client")})
        from persistence.provision import create_queues, create_tables
        from workflows.celery.app import worker_queues
        from workflows.settings import Settings, configure

        configure(Settings.from_env())
        create_tables(Settings.from_env())
        create_queues(Settings.from_env(), worker_queues())
        with Cluster(logdir) as cluster:
            cluster.start("wf-worker", [sys.executable, "-m", "workflows", "worker", "-c", str(args.concurrency),
                                        "--loglevel", "WARNING"], env)
            cluster.start("wf-beat", [sys.executable, "-m", "workflows", "beat", "--loglevel", "WARNING"], env)
            prio_one.start(0).result(timeout=120)  # warm-up: the worker consumes
            figures.append(measure(cluster, args.backlog, args.high, "low", "high", args.timeout))
            print(json.dumps(figures[-1]), flush=True)
            if args.baseline:
                figures.append(measure(cluster, args.backlog, 1, "normal", "normal", args.timeout))
                print(json.dumps(figures[-1]), flush=True)
    finally:
        front.stop()
    for f in figures:
        print(f"{f['probe_priority']} runs behind {f['backlog']} {f['backlog_priority']} runs: p50 {f['p50']:.3f} s, "
              f"p95 {f['p95']:.3f} s (backlog queued in {f['queued_in_s']} s, drained in {f['drained_in_s']} s)")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"priority-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps({"command": "python -m bench.priority " + " ".join(argv or sys.argv[1:]),
                                "figures": figures}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
