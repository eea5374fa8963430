"""Processes killed with SIGKILL at chosen points: every run completes, each step result is
recorded once and each join fires once. Each case runs on its own tables and queues."""

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
from tests.waiting import wait_for
from workflows.core.model.records import with_last_outcome
from workflows.settings import Settings

pytestmark = pytest.mark.crash

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def stack(proc_env, tmp_path):  # type: ignore[no-untyped-def]
    """An isolated deployment (own table and queue prefix) on the session's AWS server."""
    tag = uuid.uuid4().hex[:6]
    env = {**proc_env, "WORKFLOWS_TABLE_PREFIX": f"c{tag}-", "WORKFLOWS_QUEUE_PREFIX": f"c{tag}-",
           "WORKFLOWS_CRASH_DIR": str(tmp_path), "WORKFLOWS_LEASE_SECONDS": "3"}
    settings = Settings.from_env(env)
    create_tables(settings)
    create_queues(settings, ["crashy", "dup", "payments"])
    return env, get_store(settings)


def start(env: dict[str, str], workflow: str, *args: object) -> str:
    out = subprocess.run([sys.executable, "-m", "workflows", "runs", "start", workflow, "--args", json.dumps(args)],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def wait_done(store, run_id: str, timeout: float = 120):  # type: ignore[no-untyped-def]
    return wait_for(lambda: (run := store.get_run(run_id)).is_terminal and run, timeout, poll=0.2,
                    what=f"run {run_id} ends")


CASES = {
    # point: (victim kind, workflow, args, expected result)
    "after_step_record": ("worker", "recorded_pair", ("TAG",), None),
    "mid_resume": ("worker", "sequence", (4,), 6),
    "after_marked_record": ("worker", "sequence", (4,), 6),
    "mid_fan_in": ("worker", "fan_out", (6,), [0, 2, 4, 6, 8, 10]),
    "after_join": ("worker", "fan_out", (6,), [0, 2, 4, 6, 8, 10]),
    "after_tally": ("worker", "det_quorum_sum", (6,), "ok"),
    "beat_tick": ("beat", "sleeper", (0.5,), None),
}
#: Settings of a case's processes besides the deployment's.
SETTINGS_OF = {"after_marked_record": {"WORKFLOWS_IN_PLACE_SECONDS": "0"}}  # every step sent as a message


@pytest.mark.parametrize("point", sorted(CASES))
def test_kill_at_point_then_recovery_completes(point, stack, spawn) -> None:  # type: ignore[no-untyped-def]
    env, store = stack
    env = {**env, **SETTINGS_OF.get(point, {})}
    kind, workflow, args, expected = CASES[point]
    crash_env = {**env, "WORKFLOWS_CRASH_AT": point,
                 "WORKFLOWS_IMPORTS": env["WORKFLOWS_IMPORTS"] + ",tests.crash.crashpoints"}
    victim = spawn(kind, env=crash_env)
    other = spawn("beat" if kind == "worker" else "worker", env=env)
    (victim if kind == "worker" else other).wait_ready()  # the run's first message waits for no boot
    tag = uuid.uuid4().hex[:10]
    args = tuple(tag if a == "TAG" else a for a in args)
    run_id = start(env, workflow, *args)
    victim.popen.wait(timeout=60)  # it killed itself at the point
    assert (Path(env["WORKFLOWS_CRASH_DIR"]) / f"crashed-{point}").exists()
    survivor = spawn(kind, env=env)
    try:
        run = wait_done(store, run_id)
    finally:
        survivor.kill()
        other.kill()
    assert run.status == "completed", run.error
    if expected is not None:
        assert json.loads(run.result) == expected
    history = store.read_history(run_id)
    seqs = [e.seq for e in history]
    assert len(seqs) == len(set(seqs))  # each outcome recorded once (the key is the dedupe)
    if run.last_outcome is not None:  # the outcome the end carries is no second record of its op
        assert run.last_outcome.seq not in seqs
        history = with_last_outcome(run, history)
    if workflow == "recorded_pair":
        # The recorded step never ran again. The second step has no record when the worker dies: it
        # runs at least once (a copy that recovery sends while its message waits may run too).
        first, second = json.loads(run.result)
        assert first == 1 and flows.executions(f"{tag}-1") == 1
        assert 1 <= second <= flows.executions(f"{tag}-2")
    if workflow == "fan_out":
        joins = [e for e in history if e.kind == "parallel"]
        assert len(joins) == 1 and joins[0].status == "completed"
        branches = store.branch_results(f"{run_id}#0")
        assert [b.index for b in branches] == list(range(6))
    if workflow == "det_quorum_sum":
        [decision] = [e for e in history if e.kind == "parallel"]
        assert decision.status == "completed" and len(json.loads(decision.data)["succeeded"]) >= 2
    if workflow == "sleeper":
        assert any(e.kind == "sleep" and e.status == "fired" for e in history)
