"""An outage of every worker while beat runs, with real processes (invariant 16): beat recovers the
waiting run again and again, past ``WORKFLOWS_MAX_RECOVERY_ATTEMPTS``, and fails nothing; once a
worker starts, the run completes. Its own tables and queues, so no other test's worker takes its
messages; a 2 s lease, so 20 leases pass in well under a minute."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from persistence import get_store
from persistence.provision import create_queues, create_tables
from tests.waiting import wait_for
from workflows.settings import Settings

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CAP = 3

START = """
import sys
from tests.e2e import flows
print(flows.sequence.start(int(sys.argv[1])).run_id)
"""


def test_a_run_outlives_an_outage_of_every_worker_past_the_recovery_cap(proc_env, spawn) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:6]
    env = {**proc_env, "WORKFLOWS_TABLE_PREFIX": f"o{tag}-", "WORKFLOWS_QUEUE_PREFIX": f"o{tag}-",
           "WORKFLOWS_IMPORTS": "tests.e2e.flows", "WORKFLOWS_LEASE_SECONDS": "2",
           "WORKFLOWS_SWEEP_INTERVAL": "0.5", "WORKFLOWS_MAX_RECOVERY_ATTEMPTS": str(CAP)}
    settings = Settings.from_env(env)
    create_tables(settings)
    create_queues(settings)
    store = get_store(settings)
    beat = spawn("beat", env=env)
    out = subprocess.run([sys.executable, "-c", START, "3"], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    run_id = out.stdout.split()[-1]

    # No worker runs: beat claims the expired lease again and again, past the cap, and fails nothing.
    wait_for(lambda: store.get_run(run_id).recoveries > CAP + 1, 90, what="recoveries past the cap")
    waiting = store.get_run(run_id)
    assert waiting.status == "pending" and waiting.recovery_faults == 0, beat.output()[-3000:]
    assert waiting.recovery_pending == waiting.recoveries

    worker = spawn("worker", env=env)  # the fleet is back
    done = wait_for(lambda: (r := store.get_run(run_id)).is_terminal and r, 90, what="the run's end")
    assert (done.status, done.result) == ("completed", "3"), worker.output()[-3000:]
    assert done.recovery_faults == 0
