"""Observability across real processes: a prefork worker and beat run a workflow (a step, a
retried step, a sleep); the test reads the spans they export, scrapes their /metrics and reads
the worker's JSON log lines."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from persistence.provision import create_queues, create_tables
from workflows.observe.otel import run_trace
from workflows.settings import Settings

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]

START = """
import sys
from tests.e2e import observe_flows
run = observe_flows.observed.start(sys.argv[1])
print(run.run_id, run.result(timeout=90))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def spans_of(path: Path, run_id: str) -> list[dict[str, Any]]:
    spans = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [s for s in spans if s["attributes"].get("workflows.run_id") == run_id]


def test_one_run_is_one_trace_with_metrics_and_json_logs(proc_env, spawn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    traces = tmp_path / "spans.jsonl"
    multiproc = tmp_path / "prom"
    multiproc.mkdir()
    env = {**proc_env, "WORKFLOWS_TABLE_PREFIX": f"o{tag}-", "WORKFLOWS_QUEUE_PREFIX": f"o{tag}-",
           "WORKFLOWS_IMPORTS": proc_env["WORKFLOWS_IMPORTS"] + ",tests.e2e.observe_flows",
           "WORKFLOWS_TRACES": f"file:{traces}", "WORKFLOWS_LOG_FORMAT": "json"}
    settings = Settings.from_env(env)
    create_tables(settings)
    create_queues(settings, ["crashy", "dup", "payments"])
    worker_port, beat_port = free_port(), free_port()
    worker = spawn("worker", "-P", "prefork", "-c", "2",
                   env={**env, "WORKFLOWS_METRICS_PORT": str(worker_port), "PROMETHEUS_MULTIPROC_DIR": str(multiproc)})
    beat = spawn("beat", env={**env, "WORKFLOWS_METRICS_PORT": str(beat_port)})
    try:
        out = subprocess.run([sys.executable, "-c", START, tag], env=env, cwd=ROOT, capture_output=True,
                             text=True, timeout=150)
        assert out.returncode == 0, out.stderr[-3000:] + worker.output()[-3000:]
        run_id, result = out.stdout.split()[-2:]
        assert result == "13"
        time.sleep(1)  # no condition to poll: the ending resume's last span and counters follow the result

        at_worker, at_beat = scrape(worker_port), scrape(beat_port)
        flow = {"workflow": "observed"}
        assert value(at_worker, "workflows_steps_started_total", **flow, step="observed_add") == 1
        assert value(at_worker, "workflows_steps_started_total", **flow, step="observed_flaky") == 2
        assert value(at_worker, "workflows_steps_completed_total", **flow, step="observed_add") == 1
        assert value(at_worker, "workflows_steps_completed_total", **flow, step="observed_flaky") == 1
        assert value(at_worker, "workflows_steps_retried_total", **flow, step="observed_flaky") == 1
        assert value(at_worker, "workflows_steps_failed_total", **flow, step="observed_flaky") == 0
        assert value(at_worker, "workflows_step_duration_seconds_count", **flow, step="observed_flaky",
                     status="retry") == 1
        assert value(at_worker, "workflows_waits_total", **flow, kind="sleep") == 1
        assert value(at_worker, "workflows_runs_ended_total", **flow, status="completed") == 1
        assert value(at_worker, "workflows_run_duration_seconds_count", **flow, status="completed") == 1
        assert value(at_beat, "workflows_timers_fired_total", kind="sleep") == 1
        assert value(at_beat, "workflows_timers_fired_total", kind="retry") == 1
        assert value(at_beat, "workflows_timer_lag_seconds_count", kind="sleep") == 1

        spans = spans_of(traces, run_id)
        trace_id, root_id = run_trace(run_id)
        assert {s["context"]["trace_id"] for s in spans} == {f"0x{trace_id:032x}"}
        names = sorted(s["name"] for s in spans)
        for name in ("run observed", "resume observed", "step observed_add", "wait sleep", "timer sleep",
                     "timer retry"):
            assert name in names, names
        assert names.count("step observed_flaky") == 2
        attempts = sorted(s["attributes"]["workflows.attempt"] for s in spans if s["name"] == "step observed_flaky")
        assert attempts == [1, 2]
        flaky = next(s for s in spans if s["name"] == "step observed_flaky")
        assert (flaky["attributes"]["workflows.position"], flaky["attributes"]["workflows.workflow"]) == (1, "observed")
        (root,) = [s for s in spans if s["name"] == "run observed"]
        assert root["context"]["span_id"] == f"0x{root_id:016x}" and root["parent_id"] is None
        by_id = {s["context"]["span_id"]: s for s in spans}
        # beat fired the sleep's timer in its span; the resume it sent ran on the worker as its child
        timer = next(s for s in spans if s["name"] == "timer sleep")
        woken = [s for s in spans if s["parent_id"] == timer["context"]["span_id"]]
        assert [s["name"] for s in woken] == ["resume observed"]
        assert all(s["parent_id"] in by_id for s in spans if s is not root), "every span's parent is in the trace"

        lines = [json.loads(line) for line in worker.output().splitlines() if line.startswith("{")]
        mine = [e for e in lines if e.get("run_id") == run_id]
        retry = next(e for e in mine if e["logger"] == "workflows.steps")
        assert (retry["workflow"], retry["step"], retry["pos"]) == ("observed", "observed_flaky", 1)
    finally:
        worker.kill()
        beat.kill()
