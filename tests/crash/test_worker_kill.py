"""Workers killed with SIGKILL mid-run: the run completes and each result is recorded once."""

from __future__ import annotations

import signal
import uuid

import pytest

from tests.e2e import flows
from tests.waiting import wait_for

pytestmark = pytest.mark.crash


def test_kill_9_during_a_step_then_a_new_worker_completes_the_run(cluster, spawn) -> None:
    victim = spawn("worker", "-Q", "crashy", "-c", "2")
    t = uuid.uuid4().hex[:10]
    run = flows.long_step.start(t, 4.0)
    wait_for(lambda: flows.executions(t) == 1)  # the step is running in the victim
    victim.kill(signal.SIGKILL)
    assert victim.popen.returncode == -signal.SIGKILL
    replacement = spawn("worker", "-Q", "crashy", "-c", "2")
    try:
        assert run.result(timeout=90) == "slept"
    finally:
        replacement.kill(signal.SIGTERM)
    outcomes = [e for e in run.history() if e.kind == "step" and e.is_outcome]
    assert len(outcomes) == 1 and outcomes[0].status == "completed"
    assert flows.executions(t) >= 2  # at-least-once execution, exactly-once recording
