"""Start and time pyworkflow-engine runs (runs in the peer's virtualenv, prints one JSON line).

Usage: ``python -m bench.peer_driver WORKFLOW N RUNS CONCURRENCY TIMEOUT``.
A run's latency is from just before ``start()`` to the run's stored ``completed_at``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pyworkflow

from bench.peer_app import WORKFLOWS, storage

TERMINAL_FAILURES = {"failed", "cancelled", "interrupted"}


async def completed_steps(run_id: str) -> int:
    """How many steps of a run have recorded a result."""
    try:
        events = await pyworkflow.get_workflow_events(run_id)
    except Exception as exc:  # only used to describe a timeout
        return f"? ({exc})"  # type: ignore[return-value]
    return sum(1 for e in events if getattr(e.type, "value", e.type) == "step.completed")


async def one_run(workflow: Any, n: int, deadline: float) -> float:
    """Start one run and wait for it; return its latency in seconds."""
    started = datetime.now(UTC).timestamp()
    run_id = await pyworkflow.start(workflow, n)
    poll = 0.05
    while True:
        run = await pyworkflow.get_workflow_run(run_id)
        status = run.status.value if run is not None else "missing"
        if status == "completed":
            ended = (run.completed_at or run.updated_at).timestamp()
            return ended - started
        if status in TERMINAL_FAILURES:
            raise RuntimeError(f"run {run_id} ended {status}: {run.error}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} still {status} after {time.time() - started:.0f}s "
                               f"({await completed_steps(run_id)} steps completed)")
        await asyncio.sleep(poll)
        poll = min(poll * 1.5, 1.0)


async def main(name: str, n: int, runs: int, concurrency: int, timeout: float) -> dict[str, Any]:
    workflow = WORKFLOWS[name]
    await storage.connect()  # creates the peer's table if its worker has not yet
    deadline = time.monotonic() + timeout
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    errors: list[str] = []

    async def guarded() -> None:
        async with gate:
            try:
                latencies.append(await one_run(workflow, n, deadline))
            except Exception as exc:  # reported, never turned into a figure
                errors.append(f"{type(exc).__name__}: {exc}")

    began = time.perf_counter()
    await asyncio.gather(*(guarded() for _ in range(runs)))
    return {"latencies": latencies, "wall": time.perf_counter() - began, "errors": errors}


if __name__ == "__main__":
    wf, size, count, conc, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    print(json.dumps(asyncio.run(main(wf, size, count, conc, limit))), flush=True)
