"""The systems under test: this library, plain Celery, and pyworkflow-engine.

Each adapter starts its worker processes on the shared stack and runs the
benchmark's shapes (sequences, fan-outs, bursts of single-step runs), returning
per-run latencies measured from just before the start call to the end time the
system itself stored (so the client's polling interval does not blur them).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .stack import ROOT, Cluster, Front

STARTERS = 32  # client threads that start runs "at once"
POLL = 0.02  # first result poll of the client (latencies come from stored end times, not from polls)


@dataclass
class Timing:
    """Latencies (seconds) of the runs that ended, the scenario's wall time, and failures.

    ``steps_done``: for a run that did not end in time, the steps it had completed
    when it was given up (its rate is ``steps_done / wall``)."""

    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0
    errors: list[str] = field(default_factory=list)
    steps_done: int | None = None


def timed_runs(count: int, concurrency: int, run_one: Callable[[], float]) -> Timing:
    """Run ``run_one`` ``count`` times with ``concurrency`` in flight; collect latencies and errors."""
    timing = Timing()

    def guarded(_: int) -> None:
        try:
            timing.latencies.append(run_one())
        except Exception as exc:  # reported in the table, never turned into a figure
            timing.errors.append(f"{type(exc).__name__}: {exc}")

    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(guarded, range(count)))
    timing.wall = time.perf_counter() - began
    return timing


def burst(count: int, start: Callable[[int], Any], finish: Callable[[Any], float]) -> Timing:
    """Start ``count`` runs at once from many threads, then wait for each; latency = end - start."""
    timing = Timing()
    began = time.perf_counter()
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=STARTERS) as pool:
        handles = list(pool.map(start, range(count)))
    for handle in handles:
        try:
            timing.latencies.append(finish(handle) - t0)
        except Exception as exc:
            timing.errors.append(f"{type(exc).__name__}: {exc}")
    timing.wall = max(timing.latencies, default=time.perf_counter() - began)
    return timing


def ended_at(handle: Any, timeout: float) -> float:
    """Wait like ``RunHandle.result`` does (polls from 20 ms, backing off to 1 s), reading the run once per
    poll; return its stored end time (or raise how the run ended, if not completed).

    ``result()`` followed by ``record()`` reads the run once more after it ended: in a burst, that
    read takes the emulator's DynamoDB turn once per run, which Celery's client does not pay.
    """
    from workflows.client import has_ended, outcome
    from workflows.core.model.records import RunStatus

    deadline, poll = time.monotonic() + timeout, POLL
    while True:
        run = handle.record()
        if has_ended(run):
            if run.status != RunStatus.COMPLETED:
                outcome(run)  # raises how it ended
            return float(run.ended_at)
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {handle.run_id} did not end within {timeout}s (status {run.status})")
        time.sleep(poll)
        poll = min(poll * 1.5, 1.0)


SENT = "workflows-sent"
NO_IN_PLACE = {"WORKFLOWS_IN_PLACE_SECONDS": "0"}


def pool_args(pool: str, concurrency: int) -> list[str]:
    """A Celery worker's pool options: ``threads`` (the bench's default) or ``prefork`` (Celery's)."""
    return ["--pool", pool, "-c", str(concurrency)]


class Workflows:
    """This library: ``python -m workflows worker`` processes and one beat."""

    name, prefix, label = "workflows", "wfb", "this library"
    #: Tables that grow with every run, emptied before each measurement (``Plan.fresh``); the
    #: schedules and flow-control tables are kept (beat and the workers hold state there).
    fresh_tables = ("runs", "history", "timers", "joins", "signals", "idempotency", "tags", "hooks")

    def __init__(self, workers: int, concurrency: int, *, in_place: bool = True, pool: str = "threads") -> None:
        self.workers, self.concurrency, self.in_place, self.pool = workers, concurrency, in_place, pool
        if not in_place:  # same tables and queues (so the same counting prefix), other workers
            self.name, self.label = SENT, "this library, every step sent (WORKFLOWS_IN_PLACE_SECONDS=0)"

    @staticmethod
    def env(front: Front, role: str, sweep: float, poll: int) -> dict[str, str]:
        return {**front.env(role), "WORKFLOWS_TABLE_PREFIX": "wfb-", "WORKFLOWS_QUEUE_PREFIX": "wfb-",
                "WORKFLOWS_IMPORTS": "bench.flows", "WORKFLOWS_SWEEP_INTERVAL": str(sweep),
                "WORKFLOWS_POLL_WAIT_SECONDS": str(poll)}

    def start(self, front: Front, cluster: Cluster, sweep: float, poll: int) -> None:
        from persistence.provision import create_queues, create_tables
        from workflows.celery.app import worker_queues
        from workflows.settings import get_settings

        create_tables(get_settings())
        create_queues(get_settings(), worker_queues())
        worker_env = {**self.env(front, "worker", sweep, poll), **({} if self.in_place else NO_IN_PLACE)}
        for i in range(self.workers):
            cluster.start(f"wf-worker-{i}", [sys.executable, "-m", "workflows", "worker",
                                             *pool_args(self.pool, self.concurrency), "-n", f"wf{i}@%h",
                                             "--loglevel", "WARNING"], worker_env)
        cluster.start("wf-beat", [sys.executable, "-m", "workflows", "beat", "--loglevel", "WARNING"],
                      self.env(front, "beat", sweep, poll))
        from bench import flows

        flows.single.start(0).result(timeout=120)  # warm-up: every process is consuming

    @staticmethod
    def _wait(handle: Any, t0: float, timeout: float) -> float:
        return ended_at(handle, timeout) - t0

    def sequence(self, steps: int, runs: int, concurrency: int, inline: bool, timeout: float) -> Timing:
        from bench import flows

        workflow = flows.inline_sequence if inline else flows.sequence

        def one() -> float:
            t0 = time.time()
            return self._wait(workflow.start(steps), t0, timeout)

        return timed_runs(runs, concurrency, one)

    def history(self, steps: int, inline: bool, timeout: float) -> Timing:
        """One run of ``steps`` steps; past ``timeout`` it is cancelled and its completed steps counted."""
        from bench import flows

        workflow = flows.inline_sequence if inline else flows.sequence
        t0 = time.time()
        handle = workflow.start(steps)
        try:
            return Timing(latencies=[self._wait(handle, t0, timeout)], wall=time.time() - t0)
        except TimeoutError:
            wall = time.time() - t0
            done = sum(1 for record in handle.history() if record.is_outcome and record.status == "completed")
            handle.cancel()  # so it stops using the worker during the next scenarios
            return Timing(wall=wall, steps_done=done,
                          errors=[f"timeout: {done}/{steps} steps done in {wall:.0f}s ({done / wall:.1f} steps/s)"])

    def fan_out(self, width: int, timeout: float) -> Timing:
        from bench import flows

        return timed_runs(1, 1, lambda: self._wait(flows.fan_out.start(width), time.time(), timeout))

    def burst(self, runs: int, timeout: float) -> Timing:
        from bench import flows

        return burst(runs, flows.single.start, lambda handle: ended_at(handle, timeout))


def _celery_done(result: Any, timeout: float) -> float:
    """Wait like ``RunHandle.result`` does (polls from 20 ms, backing off to 1 s); return the stored end time.

    ``AsyncResult.get`` polls at a fixed interval, which at 20 ms would load the
    shared emulator far more than the other systems' clients do.
    """
    deadline, poll = time.monotonic() + timeout, POLL
    while not result.ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"task {result.id} did not finish within {timeout}s")
        time.sleep(poll)
        poll = min(poll * 1.5, 1.0)
    result.get(timeout=timeout)
    done = result.date_done
    if isinstance(done, str):
        done = dt.datetime.fromisoformat(done)
    if done.tzinfo is None:
        done = done.replace(tzinfo=dt.timezone.utc)
    return float(done.timestamp())


class PlainCelery:
    """The baseline: a Celery app with the DynamoDB result backend (:mod:`bench.baseline`)."""

    name, prefix, label = "celery", "celb", "plain Celery"
    fresh_tables = ("results",)

    def __init__(self, workers: int, concurrency: int, *, pool: str = "threads") -> None:
        self.workers, self.concurrency, self.pool = workers, concurrency, pool

    def start(self, front: Front, cluster: Cluster, sweep: float, poll: int) -> None:
        env = {**front.env("worker"), "BASELINE_PREFIX": "celb-", "WORKFLOWS_POLL_WAIT_SECONDS": str(poll)}
        for i in range(self.workers):
            cluster.start(f"celery-worker-{i}", [sys.executable, "-m", "celery", "-A", "bench.baseline", "worker",
                                                 *pool_args(self.pool, self.concurrency), "-n",
                                                 f"celb{i}@%h", "-Q", "tasks", "--loglevel", "WARNING"], env)
        from bench import baseline

        for attempt in range(3):
            try:
                baseline.add.delay(1, 1).get(timeout=120)
                return
            except Exception as exc:  # the client's and the worker's backends both create the results table
                if "ResourceInUseException" not in str(exc) or attempt == 2:
                    raise
                time.sleep(1)

    def sequence(self, steps: int, runs: int, concurrency: int, inline: bool, timeout: float) -> Timing:
        from bench import baseline

        def one() -> float:
            t0 = time.time()
            return _celery_done(baseline.sequence(steps).apply_async(), timeout) - t0

        return timed_runs(runs, concurrency, one)

    def fan_out(self, width: int, timeout: float) -> Timing:
        from bench import baseline

        def one() -> float:
            t0 = time.time()
            return _celery_done(baseline.fan_out(width).apply_async(), timeout) - t0

        return timed_runs(1, 1, one)

    def burst(self, runs: int, timeout: float) -> Timing:
        from bench import baseline

        return burst(runs, lambda i: baseline.add.delay(i, 1), lambda r: _celery_done(r, timeout))


class PyWorkflow:
    """pyworkflow-engine 0.4.0 in its own virtualenv: its Celery worker and a driver subprocess."""

    name, prefix, label = "pyworkflow", "pwb", "pyworkflow-engine 0.4.0"
    fresh_tables: tuple[str, ...] = ()  # run once each, on its own tables

    def __init__(self, python: Path, concurrency: int, pool: str = "threads") -> None:
        self.python, self.concurrency, self.pool = python, concurrency, pool
        self.front: Front | None = None

    def _env(self, role: str, poll: int) -> dict[str, str]:
        assert self.front is not None
        return {**self.front.env(role), "PEER_PREFIX": "pwb-", "PEER_POLL_WAIT_SECONDS": str(poll),
                "PYWORKFLOW_LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT)}

    def start(self, front: Front, cluster: Cluster, sweep: float, poll: int) -> None:
        self.front, self.poll = front, poll
        queues = "pyworkflow.default,pyworkflow.steps,pyworkflow.workflows,pyworkflow.schedules"
        cluster.start("peer-worker", [str(self.python), "-m", "celery", "-A", "bench.peer_app", "worker", "--pool",
                                      self.pool, "-c", str(self.concurrency), "-Q", queues, "--loglevel", "WARNING"],
                      self._env("worker", poll))
        timing = self._drive("sequence", 1, 1, 1, 180)
        if timing.errors:
            raise RuntimeError(f"pyworkflow warm-up failed: {timing.errors[0]}")

    def _drive(self, workflow: str, n: int, runs: int, concurrency: int, timeout: float) -> Timing:
        argv = [str(self.python), "-m", "bench.peer_driver", workflow, str(n), str(runs), str(concurrency),
                str(timeout)]
        try:
            done = subprocess.run(argv, cwd=ROOT, env={**os.environ, **self._env("client", self.poll)},
                                  capture_output=True, text=True, timeout=timeout + 60)
        except subprocess.TimeoutExpired:
            return Timing(wall=timeout, errors=[f"driver did not finish within {timeout + 60:.0f}s"])
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            return Timing(errors=[f"driver exited {done.returncode}: {done.stderr.strip()[-400:]}"])
        data = json.loads(lines[-1])
        return Timing(latencies=data["latencies"], wall=data["wall"], errors=data["errors"])

    def sequence(self, steps: int, runs: int, concurrency: int, inline: bool, timeout: float) -> Timing:
        return self._drive("inline_sequence" if inline else "sequence", steps, runs, concurrency, timeout)

    def fan_out(self, width: int, timeout: float) -> Timing:
        return self._drive("fan_out", width, 1, 1, timeout)
