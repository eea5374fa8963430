"""Versioning, fork and rerun on real worker and beat processes over the moto server.

* A run of a workflow the session's worker does not have (a rolling deploy) is deferred,
  not failed, and completes once a worker with the code runs.
* A failed run is rerun from its failed step, and forked at a position from the CLI: the
  outcomes before the position are reused, the steps from it run again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.e2e import late_flows, version_flows
from tests.e2e.flows import counter_dir, executions
from tests.waiting import wait_for
from workflows import RunFailed, RunStatus, get_run
from workflows.core.admission.deferral import Deferral

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def tag() -> str:
    return uuid.uuid4().hex[:10]


def test_a_run_no_worker_has_the_code_for_is_deferred_until_one_has_it(cluster, spawn) -> None:  # type: ignore[no-untyped-def]
    t = tag()
    run = late_flows.late_arrival.start(t)
    assert (run.record().code_version or "").startswith("src-")  # stamped by the code that started it
    # the session's worker met it and deferred it
    wait_for(lambda: run.status() == RunStatus.SUSPENDED, 30, poll=0.2, what="the run is deferred")
    recoveries = run.record().recoveries  # a lease that passed while the session's worker started
    # a few deferral rounds (1 s each): woken by beat, deferred again
    wait_for(lambda: (d := Deferral.of(run.record())) is not None and d.count >= 2, 30, poll=0.2,
             what="two deferral rounds")
    record = run.record()
    assert (record.status, record.error, record.recoveries) == (RunStatus.SUSPENDED, None, recoveries)
    deferral = Deferral.of(record)  # kept on the run by the deferring write: why, since when, tries
    assert deferral is not None and "late_arrival" in deferral.reason and deferral.count >= 2
    assert deferral.since < deferral.next_at
    imports = os.environ["WORKFLOWS_IMPORTS"] + ",tests.e2e.late_flows"
    worker = spawn("worker", "-Q", "workflows,steps", env={"WORKFLOWS_IMPORTS": imports})  # the deploy arrives
    try:
        assert run.result(timeout=90) == f"hello {t} (new path)"
    finally:
        worker.kill(signal.SIGTERM)
    assert "deferred" in cluster["worker"].output()


def test_rerun_from_the_failed_step_and_fork_from_the_cli(cluster) -> None:  # type: ignore[no-untyped-def]
    t = tag()
    broken = counter_dir() / f"broken-{t}"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.touch()
    run = version_flows.fixable.start(t)
    with pytest.raises(RunFailed, match="is broken"):
        run.result(timeout=60)
    broken.unlink()  # the fix is deployed
    again = run.rerun()
    assert again.result(timeout=60) == 11
    assert (executions(f"{t}-first"), executions(f"{t}-second"), executions(f"{t}-third")) == (1, 2, 1)
    record = again.record()
    assert (record.forked_from, record.forked_at) == (run.run_id, 1)

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "workflows", "runs", "fork", again.run_id, "--at", "2"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    fork = get_run(out.stdout.strip())
    assert fork.result(timeout=60) == 11
    assert (executions(f"{t}-first"), executions(f"{t}-second"), executions(f"{t}-third")) == (1, 2, 2)
    shown = subprocess.run([sys.executable, "-m", "workflows", "runs", "show", fork.run_id], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
    assert f"forked from {again.run_id} at op 2" in shown.stdout and "version" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "workflows", "runs", "rerun", fork.run_id], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "ForkRefused" in refused.stderr and "only a failed run" in refused.stderr
