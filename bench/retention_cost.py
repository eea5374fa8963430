"""``python -m bench.retention_cost [--runs N] [--steps S]``: what retention costs per recorded step,
counted by the counting AWS front (moto over HTTP) with the DynamoDB store.

The engine runs in this process over the DynamoDB store, every message delivered in-process (no
broker: only the store's requests matter here), on a virtual clock so that a run can live for weeks.
Three kinds of run, ``--runs`` of each, ``--steps`` steps in place each:

* **plain**: nothing written without a TTL; it ends out of the retention index;
* **tagged** (one tag at start): swept by beat, which stamps its tag and takes it out of the index;
* **long-lived**: the steps, then a 60-day sleep: beat's keep-alive pass renews its items on the way.

For each, the DynamoDB requests beat's retention work makes (the sweep and the keep-alive pass, all
beat does here), per recorded step. Prints a table and writes ``bench/results/retention-<time>.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
import uuid
from pathlib import Path
from typing import Any

from workflows import sleep, step, workflow
from workflows.core.engine import Engine
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.core.storage.retention import keep_alive_period, sweep_retention
from workflows.memory import ManualClock, RecordingTransport

from . import proxy
from .stack import store_on_front

RESULTS = Path(__file__).parent / "results"
DAY = 86_400.0
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


@step(name="bench_retention_inc")
def inc(x: int) -> int:
    return x + 1


@workflow(name="bench_retention_steps")
def steps(n: int, days: int = 0) -> int:
    value = 0
    for _ in range(n):
        value = inc(value)
    if days:
        sleep(f"{days}d")
    return value


def deliver(engine: Engine, transport: RecordingTransport) -> None:
    """Deliver every queued message (and those they queue) in this process."""
    while transport.steps or transport.resumes:
        queued, resumes = list(transport.steps), list(transport.resumes)
        transport.clear()
        for message in queued:
            run_worker_task(engine, functools.partial(execute_step, engine, message, redelivered=False))
        for resume in resumes:
            run_worker_task(engine, functools.partial(engine.receive_resume, resume, first_delivery=True))


def beat_until(engine: Engine, transport: RecordingTransport, clock: ManualClock, until: float,
               front_url: str) -> dict[str, int]:
    """Move the clock to ``until`` as beat would see it: its timers fired (the sleep's end resumes
    the run), then its retention work (the sweep and the keep-alive pass) every keep-alive period.
    The DynamoDB requests of that retention work alone, by operation."""
    from workflows.core.background.sweeper import fire_due_timers

    counts: dict[str, int] = {}
    while clock.now() < until:
        clock.advance(min(until - clock.now(), keep_alive_period(engine.settings)))
        fire_due_timers(engine)
        deliver(engine, transport)
        proxy.reset_counts(front_url)
        sweep_retention(engine)
        for operation, n in beat_requests(front_url).items():
            counts[operation] = counts.get(operation, 0) + n
    return counts


def beat_requests(front_url: str) -> dict[str, int]:
    """DynamoDB requests since the last reset, by operation."""
    return {r["operation"]: r["requests"] for r in proxy.fetch_counts(front_url) if r.get("service") == "dynamodb"}


def measure(kind: str, runs: int, n: int, front_url: str, store: Any) -> dict[str, Any]:
    """Run ``runs`` runs of ``kind`` to their end; the retention requests per recorded step."""
    clock = ManualClock(time.time())
    store.clock = clock.now
    transport = RecordingTransport({None})
    engine = Engine(store, transport, store.settings, clock=clock)
    definition = get_workflow(steps.name)
    days = 60 if kind == "long-lived" else 0
    tags = {"bench": uuid.uuid4().hex[:8]} if kind == "tagged" else None
    for _ in range(runs):
        engine.create_run(definition, json.dumps([[n, days], {}]), tags=tags)
    deliver(engine, transport)
    counts = beat_until(engine, transport, clock, clock.now() + days * DAY + engine.settings.lease_seconds + 1,
                        front_url)
    writes = sum(v for k, v in counts.items() if k in WRITES)
    return {"kind": kind, "runs": runs, "steps": n, "requests": counts,
            "writes_per_recorded_step": writes / (runs * n), "requests_per_run": sum(counts.values()) / runs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.retention_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    with store_on_front("retention", f"wfr{uuid.uuid4().hex[:4]}-") as (front, store):
        results = [measure(kind, args.runs, args.steps, front.url, store)
                   for kind in ("plain", "tagged", "long-lived")]
    print(f"{'run':12} {'runs':>5} {'steps':>6} {'writes/step':>12} {'requests/run':>13}  requests")
    for r in results:
        print(f"{r['kind']:12} {r['runs']:5d} {r['steps']:6d} {r['writes_per_recorded_step']:12.3f} "
              f"{r['requests_per_run']:13.2f}  {r['requests']}")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"retention-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
