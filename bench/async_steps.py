"""``python -m bench.async_steps [--steps 50] [--seconds 0 1] [--threads 4 50]``: what async steps gain.

Starts a local AWS emulator and, for each thread count, one real worker (threads pool);
after a warm-up run (every worker thread makes its AWS clients once), it runs a fan-out
of ``--steps`` async steps that each ``await asyncio.sleep(seconds)``, then the same
fan-out of sync steps that ``time.sleep``, for each of ``--seconds`` (0 s shows the
floor: the messages and records of the fan-out alone). Prints the wall time of each run
from start to result, and the worker's CPU seconds. See docs/guide.md, "Async".
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .stack import ROOT, Proc


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.async_steps")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seconds", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--threads", type=int, nargs="+", default=[4, 50])
    args = parser.parse_args()

    from workflows.local.server import LocalAWS

    with LocalAWS() as aws:
        session = uuid.uuid4().hex[:6]
        env = {**os.environ, **aws.environ(), "WORKFLOWS_TABLE_PREFIX": f"ab{session}-",
               "WORKFLOWS_QUEUE_PREFIX": f"ab{session}-", "WORKFLOWS_POLL_WAIT_SECONDS": "1",
               "WORKFLOWS_SWEEP_INTERVAL": "0.5", "WORKFLOWS_HOOK_SECRET": secrets.token_urlsafe(32),
               "WORKFLOWS_IMPORTS": "bench.async_flows", "PYTHONPATH": str(ROOT)}
        os.environ.update(env)
        from persistence.provision import create_queues, create_tables
        from workflows.settings import Settings, configure

        from . import async_flows

        configure(Settings.from_env())
        create_tables(Settings.from_env())
        create_queues(Settings.from_env(), [])
        print(f"{args.steps} steps in one fan-out, on one worker (threads pool)")
        print(f"{'threads':>8} {'wait s':>7} {'kind':>6} {'wall s':>8} {'worker CPU s':>13}")
        logs = Path(tempfile.mkdtemp(prefix="async-bench-"))
        for threads in args.threads:
            worker = Proc(f"worker-{threads}", [sys.executable, "-m", "workflows", "worker", "--loglevel",
                                                "WARNING", "-c", str(threads)], env, logs)
            try:
                time.sleep(3)
                flows = (("async", async_flows.bench_async_fan), ("sync", async_flows.bench_sync_fan))
                for _, flow in flows:  # warm-up
                    flow.start(threads, 0.0).result(timeout=600)
                for seconds in args.seconds:
                    for kind, flow in flows:
                        cpu, began = worker.cpu(), time.monotonic()
                        assert flow.start(args.steps, seconds).result(timeout=600) == args.steps
                        print(f"{threads:>8} {seconds:>7g} {kind:>6} {time.monotonic() - began:>8.2f} "
                              f"{worker.cpu() - cpu:>13.2f}", flush=True)
            finally:
                worker.stop()


if __name__ == "__main__":
    main()
