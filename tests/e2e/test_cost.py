"""Requests per run across real processes: a worker runs a known workflow behind the benchmark's
counting AWS front; the counts stored with the run match the worker's requests the front saw.

Attributed: every DynamoDB read and write and every SQS send the worker makes for the run, up
to the write that ends it. Not attributed (so not compared): the client's start (its write and
its resume message) and its polling for the result, the worker's SQS receives and deletes, and
the requests from the ending write on (that write itself, and any read after it).
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from bench.proxy import fetch_counts, reset_counts
from bench.stack import Front
from persistence import get_store
from persistence.provision import create_queues, create_tables
from workflows.core.storage.metering import DDB_READS, DDB_WRITES
from workflows.settings import Settings

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
STEPS = 3
#: Worker requests for the run that its stored counts cannot hold: the ending UpdateItem.
UNSTORED_AT_END = 1

START = """
import sys
from bench import flows
run = getattr(flows, sys.argv[1]).start(int(sys.argv[2]))
print(run.run_id, run.result(timeout=90))
"""


def start(env: dict[str, str], flow: str, arg: int) -> str:
    out = subprocess.run([sys.executable, "-c", START, flow, str(arg)], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=150)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()[-2]


def test_a_run_stores_the_requests_its_worker_made(proc_env, spawn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    front = Front(tmp_path)
    try:
        tag = uuid.uuid4().hex[:6]
        env = {**proc_env, **front.env("worker"), "WORKFLOWS_TABLE_PREFIX": f"c{tag}-",
               "WORKFLOWS_QUEUE_PREFIX": f"c{tag}-", "WORKFLOWS_IMPORTS": "bench.flows",
               "WORKFLOWS_IN_PLACE_SECONDS": "0"}  # every step goes as an SQS message
        settings = Settings.from_env(env)
        create_tables(settings)
        create_queues(settings)
        worker = spawn("worker", env=env)
        client = {**env, **front.env("client")}
        start(client, "single", 1)  # warm-up: the worker consumes, its models know their tables
        time.sleep(1)  # no condition to poll: the warm-up's last requests
        reset_counts(front.url)
        run_id = start(client, "sequence", STEPS)
        time.sleep(1.5)  # no condition to poll: the ending resume's last requests
        rows = [r for r in fetch_counts(front.url) if r["role"] == "worker" and r["system"] == f"c{tag}"]
        run = get_store(settings).get_run(run_id)
    finally:
        front.stop()
    ddb = sum(r["requests"] for r in rows if r["service"] == "dynamodb" and r["operation"] in DDB_READS | DDB_WRITES)
    sends = sum(r["requests"] for r in rows if r["service"] == "sqs" and r["operation"].startswith("SendMessage"))
    stored = run.ddb_reads + run.ddb_writes
    detail = f"stored {run.ddb_reads} reads + {run.ddb_writes} writes, {run.sqs_sends} sends; front saw {rows}"
    assert run.status == "completed", worker.output()[-3000:]
    assert sends == STEPS == run.sqs_sends, detail
    assert stored > 0 and ddb - stored == UNSTORED_AT_END, detail
