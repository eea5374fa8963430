"""10% of AWS requests fail (throttles, 5xx): every run still completes, no step runs twice."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from persistence import get_store
from persistence.provision import create_queues, create_tables
from tests.e2e import flows
from tests.faults.faulty_aws import FaultyAWS
from tests.waiting import holds_within
from workflows.settings import Settings

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
RUNS = 100

START = """
import json, sys
from tests.e2e import flows
tags = json.loads(sys.argv[1])
print(json.dumps([flows.twice.start(t).run_id for t in tags]))
"""


def test_hundred_runs_complete_under_ten_percent_faults(proc_env, spawn) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    # A lease longer than the burst's queueing time: recovery is not what this test is about
    # (a lease that expires while a step message is still queued re-dispatches it).
    env = {**proc_env, "WORKFLOWS_TABLE_PREFIX": f"f{tag}-", "WORKFLOWS_QUEUE_PREFIX": f"f{tag}-",
           "WORKFLOWS_LEASE_SECONDS": "60"}
    settings = Settings.from_env(env)
    create_tables(settings)  # provisioned without faults, as init-aws would be
    create_queues(settings, ["crashy", "dup", "payments"])
    faulty = FaultyAWS(rate=0.10)
    env.update({"AWS_ENDPOINT_URL": faulty.url, "AWS_ENDPOINT_URL_DYNAMODB": faulty.url,
                "AWS_ENDPOINT_URL_SQS": faulty.url})
    store = get_store(settings)  # reads by the test itself go around the faults
    procs = [spawn("worker", "-c", "8", env=env), spawn("beat", env=env)]
    try:
        tags = [f"{tag}-{i}" for i in range(RUNS)]
        out = subprocess.run([sys.executable, "-c", START, json.dumps(tags)], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        run_ids = json.loads(out.stdout.strip().splitlines()[-1])
        pending = set(run_ids)

        def every_run_ended() -> bool:
            pending.intersection_update({r for r in pending if not store.get_run(r).is_terminal})
            return not pending

        holds_within(every_run_ended, 240, poll=1)
        assert not pending, f"{len(pending)} run(s) did not end\n" + procs[0].output()[-4000:]
    finally:
        for proc in procs:
            proc.kill()
        faulty.stop()
    runs = store.get_runs(run_ids)
    assert [r.status for r in runs] == ["completed"] * RUNS, [r.error for r in runs if r.status != "completed"]
    results = [json.loads(r.result) for r in runs]
    assert results == [[1, 2]] * RUNS, [r for r in results if r != [1, 2]]
    assert [flows.executions(t) for t in tags] == [2] * RUNS  # no step ran twice
    injected = faulty.injector.injected
    assert injected["dynamodb"] > 50 and injected["sqs"] > 20, injected
