"""Prometheus metrics of the engine: an observer over ``prometheus_client``.

Every process that runs the engine records into the default registry. A prefork worker's
children share their values through files when ``PROMETHEUS_MULTIPROC_DIR`` is set (before
the process starts; prometheus_client's multiprocess mode): then :func:`exposition` merges
every process's files. The series are listed in docs/observability.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
from typing import Any, ContextManager, Iterator

from ..core.admission.deferral import Deferral
from ..core.model.pricing import estimate_cost
from ..core.model.records import RunRecord, TimerRecord
from ..core.replay.observer import NullObserver, StepAttempt
from . import require

prometheus_client = require("prometheus_client", "metrics")
from prometheus_client import CollectorRegistry, Counter, Histogram  # noqa: E402 - after the install hint

log = logging.getLogger("workflows.metrics")

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
RUN_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400)
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

RESUMES = Counter("workflows_resumes", "Resumes of runs (replays until a run suspends, dispatches or ends).",
                  ["workflow"])
STEPS_STARTED = Counter("workflows_steps_started", "Step attempts started.", ["workflow", "step"])
STEPS_COMPLETED = Counter("workflows_steps_completed", "Step attempts that returned a result.", ["workflow", "step"])
STEPS_FAILED = Counter("workflows_steps_failed", "Step attempts that failed for good (no retry left, or fatal).",
                       ["workflow", "step"])
STEPS_RETRIED = Counter("workflows_steps_retried", "Step attempts that failed and will be retried.",
                        ["workflow", "step"])
STEP_SECONDS = Histogram("workflows_step_duration_seconds", "Duration of one step attempt.",
                         ["workflow", "step", "status"], buckets=DURATION_BUCKETS)
WAITS = Counter("workflows_waits", "Runs suspended at a wait (sleep, hook, signal, child, inline retry backoff).",
                ["workflow", "kind"])
TIMERS = Counter("workflows_timers_fired", "Due timers fired by beat.", ["kind"])
TIMER_LAG = Histogram("workflows_timer_lag_seconds", "Seconds between a timer's due time and its firing.",
                      ["kind"], buckets=LAG_BUCKETS)
RECOVERIES = Counter("workflows_recoveries", "Runs whose lease expired, taken over by the reconciler.", ["workflow"])
JOIN_SECONDS = Histogram("workflows_join_latency_seconds",
                         "From a fan-out's dispatch to the branch that completed its join.",
                         ["workflow"], buckets=DURATION_BUCKETS)
RUNS_ENDED = Counter("workflows_runs_ended", "Runs ended, by final status.", ["workflow", "status"])
RUN_SECONDS = Histogram("workflows_run_duration_seconds", "From a run's creation to its end.",
                        ["workflow", "status"], buckets=RUN_BUCKETS)
RUN_REQUESTS = Counter("workflows_run_requests", "AWS requests counted for ended runs (docs/observability.md).",
                       ["workflow", "service"])
RUN_COST = Counter("workflows_run_cost_dollars", "Estimated on-demand cost of the requests counted for ended runs.",
                   ["workflow"])
DEFERRALS = Counter("workflows_deferrals", "Runs deferred by a worker that does not serve them (workflow not "
                    "registered, code version not served); a deferred run counts at least once per "
                    "WORKFLOWS_DEFER_MAX_SECONDS.", ["workflow", "reason"])
DEFERRED_FOR = Histogram("workflows_deferred_for_seconds", "At each deferral: how long the run has been deferred "
                         "(since the first deferral in a row).", ["workflow"], buckets=RUN_BUCKETS)
DEAD_LETTERS = Counter("workflows_dead_letters", "Messages set aside on the dead-letter queue.", ["reason"])

_attempt_started: contextvars.ContextVar[float] = contextvars.ContextVar("workflows_attempt_started", default=0.0)


class Metrics(NullObserver):
    """Counts the engine's work into the Prometheus series above."""

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return contextlib.nullcontext()

    def replaying(self, run: RunRecord) -> None:
        RESUMES.labels(run.workflow).inc()

    @contextlib.contextmanager
    def _attempt(self, op: StepAttempt) -> Iterator[None]:
        STEPS_STARTED.labels(op.workflow, op.step).inc()
        token = _attempt_started.set(time.monotonic())
        try:
            yield
        finally:
            _attempt_started.reset(token)

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        return self._attempt(op)

    def attempt_ended(self, op: StepAttempt, status: str, error: str | None) -> None:
        counter = {"completed": STEPS_COMPLETED, "retry": STEPS_RETRIED}.get(status, STEPS_FAILED)
        counter.labels(op.workflow, op.step).inc()
        STEP_SECONDS.labels(op.workflow, op.step, status).observe(time.monotonic() - _attempt_started.get())

    def waiting(self, run: RunRecord, pos: int, waiting: dict[str, Any]) -> None:
        WAITS.labels(run.workflow, str(waiting.get("kind", "?"))).inc()

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        TIMERS.labels(timer.kind).inc()
        TIMER_LAG.labels(timer.kind).observe(max(0.0, lag))
        return contextlib.nullcontext()

    def recovered(self, run: RunRecord) -> None:
        RECOVERIES.labels(run.workflow).inc()

    def joined(self, run: RunRecord, pos: int, branches: int, seconds: float) -> None:
        JOIN_SECONDS.labels(run.workflow).observe(seconds)

    def run_ended(self, run: RunRecord) -> None:
        RUNS_ENDED.labels(run.workflow, run.status).inc()
        if run.ended_at is not None:
            RUN_SECONDS.labels(run.workflow, run.status).observe(max(0.0, run.ended_at - run.created_at))
        RUN_REQUESTS.labels(run.workflow, "dynamodb").inc(run.ddb_reads + run.ddb_writes)
        RUN_REQUESTS.labels(run.workflow, "sqs").inc(run.sqs_sends)
        RUN_COST.labels(run.workflow).inc(estimate_cost(run.ddb_reads, run.ddb_writes, run.sqs_sends))

    def deferred(self, run: RunRecord, reason: str) -> None:
        DEFERRALS.labels(run.workflow, "version" if reason.startswith("code version") else "workflow").inc()
        deferral = Deferral.of(run)
        if deferral is not None:
            DEFERRED_FOR.labels(run.workflow).observe(max(0.0, time.time() - deferral.since))

    def dead_lettered(self, reason: str) -> None:
        DEAD_LETTERS.labels(reason.split(":", 1)[0]).inc()  # the kind, not the detail


def registry() -> Any:
    """The registry to expose: every process's values in multiprocess mode, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)
        return merged
    return prometheus_client.REGISTRY


def exposition() -> tuple[bytes, str]:
    """The text exposition of the metrics and its content type."""
    return prometheus_client.generate_latest(registry()), prometheus_client.CONTENT_TYPE_LATEST


def serve(port: int, addr: str = "0.0.0.0") -> None:
    """Serve ``/metrics`` on ``port`` from a background thread of this process."""
    prometheus_client.start_http_server(port, addr=addr, registry=registry())
    log.info("metrics served on port %d", port)


def process_exited(pid: int) -> None:
    """Tidy the multiprocess files of a prefork child that exited (its counters stay)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
