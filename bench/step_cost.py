"""``python -m bench.step_cost [--lengths 100 1000 10000] [--sent-lengths 100 1000]``: the engine's
CPU per step as a run's history grows.

Runs the real core over the in-memory ports in this process (no AWS, no broker, so the
figure is the engine's own CPU, not the emulator's): one run of N steps in place (a worker
task runs the run's steps itself, the workflow function waiting on each), one of N inline
steps, and one of N steps sent as messages (every step a message, whose task replays the
function from its history). Prints and writes (``bench/results/step-cost-<time>.json``)
CPU microseconds per step and each length's ratio to the shortest's; issue target 3 asks
for at most 1.5x from 100 to 10,000 steps in place and inline.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path
from typing import Any

from workflows import step, workflow
from workflows.core.engine import Engine
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.memory import MemoryStore, RecordingTransport
from workflows.settings import Settings

RESULTS = Path(__file__).parent / "results"


@step(name="bench_cost_inc")
def inc(x: int) -> int:
    return x + 1


@step(name="bench_cost_inc_inline", inline=True)
def inc_inline(x: int) -> int:
    return x + 1


@workflow(name="bench_cost_chain")
def chain(n: int) -> int:
    value = 0
    for _ in range(n):
        value = inc(value)
    return value


@workflow(name="bench_cost_chain_inline")
def chain_inline(n: int) -> int:
    value = 0
    for _ in range(n):
        value = inc_inline(value)
    return value


def measure(kind: str, n: int) -> dict[str, Any]:
    """Run one run of ``n`` steps of ``kind`` (in_place, inline, sent); its CPU per step."""
    in_place = kind != "sent"
    settings = Settings(in_place_seconds=1e9 if in_place else 0.0)
    transport = RecordingTransport({None})
    engine = Engine(MemoryStore(settings), transport, settings)
    definition = (chain_inline if kind == "inline" else chain).definition
    run_id, _ = engine.create_run(definition, json.dumps([[n], {}]))
    transport.resumes.clear()
    started = time.process_time()
    run_worker_task(engine, lambda: engine.resume(run_id))
    while transport.steps:  # sent steps: deliver each message as a worker would
        message = transport.steps.pop(0)
        run_worker_task(engine, functools.partial(execute_step, engine, message, redelivered=False))
    cpu = time.process_time() - started
    run = engine.store.get_run(run_id)
    if (run.status, run.result) != ("completed", str(n)):
        raise RuntimeError(f"{kind} run of {n} steps ended {run.status} with {run.result!r}")
    return {"kind": kind, "steps": n, "cpu_s": round(cpu, 4), "cpu_us_per_step": round(cpu / n * 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.step_cost")
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--sent-lengths", type=int, nargs="+", default=[100, 1000])
    args = parser.parse_args()
    rows = []
    for kind, lengths in (("in_place", args.lengths), ("inline", args.lengths), ("sent", args.sent_lengths)):
        first = None
        for n in lengths:
            row = measure(kind, n)
            first = first or row["cpu_us_per_step"]
            row["vs_shortest"] = round(row["cpu_us_per_step"] / first, 2)
            rows.append(row)
            print(f"{kind:>9} {n:>7} steps  {row['cpu_us_per_step']:>9.1f} us CPU/step  {row['vs_shortest']:>6.2f}x")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"step-cost-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")


if __name__ == "__main__":
    main()
