"""``first_of``: whichever of a signal, a hook, a timer, a step's or a child's result comes first;
the winner recorded once (replays never race again), the others settled as without the race."""

from __future__ import annotations

import pytest

from tests.testing import first_flows as flows
from tests.testing.guide_blocks import guide_example
from workflows import InvalidInput, first_of, workflow
from workflows.core.model.records import OpKind
from workflows.export import export_run
from workflows.testing import WorkflowEnv, replay


@pytest.fixture(autouse=True)
def _reset_seen() -> None:
    flows.SEEN.clear()


def _races(env: WorkflowEnv, run_id: str) -> list[str]:
    return [e.name or "" for e in env.store.read_history(run_id) if e.kind == OpKind.FIRST_OF.value]


def test_a_signal_beats_a_timer(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_signal_timer)
    workflow_env.advance("10m")
    workflow_env.signal(run, "go", {"ok": True})
    assert run.result() == {"key": "go", "index": 0, "kind": "signal", "value": {"ok": True}}
    assert _races(workflow_env, run.run_id) == ["signal:go | timer:3600s"]


def test_a_timer_beats_a_signal_and_the_late_signal_stays_pending(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_then_wait)
    workflow_env.advance("2h")
    assert workflow_env.store.get_run(run.run_id).waiting["kind"] == "signal"  # type: ignore[index]
    workflow_env.signal(run, "go", "late")
    assert run.result() == ["timer", "late"]


def test_a_step_beats_a_timer_and_a_signal(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_step, 60)
    assert run.result() == {"key": 2, "index": 2, "kind": "step", "value": 42}


def test_a_timer_beats_a_step_that_has_not_run(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_step, 0)
    assert run.result() == {"key": 1, "index": 1, "kind": "timer", "value": None}


def test_a_pending_signal_wins_at_once_and_the_step_is_never_sent(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_after_sleep)
    workflow_env.advance("10s")
    workflow_env.signal(run, "go", 7)
    assert run.result() == {"key": 1, "index": 1, "kind": "signal", "value": 7}
    assert workflow_env.store.branch_results(f"{run.run_id}#1") == []


def test_a_hook_wins_or_stays_pending_for_a_later_wait(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_hook)
    workflow_env.advance("1h")
    workflow_env.resume_hook(run, "approve", "yes")
    assert run.result() == {"key": "approve", "index": 0, "kind": "hook", "value": "yes"}
    late = workflow_env.start(flows.race_hook)
    workflow_env.advance("2d")
    workflow_env.resume_hook(late, "approve", "later")
    assert late.result() == {"key": "late", "index": 1, "kind": "timer", "value": None, "later": "later"}


def test_a_child_wins_or_its_failure_is_raised(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_child, False)
    assert run.result() == {"key": 0, "index": 0, "kind": "child", "value": 8}
    assert workflow_env.start(flows.race_child, True).result() == "child failed"


def test_a_failed_step_or_an_expired_hook_raises(workflow_env: WorkflowEnv) -> None:
    assert workflow_env.start(flows.race_step_fails).result() == "step failed: FatalError: boom"
    assert workflow_env.start(flows.race_hook_expires).result() == "hook 'approve' timed out"


def test_the_winner_is_recorded_once_and_replays_read_it() -> None:
    with WorkflowEnv() as env:
        run = env.start(flows.race_recorded)
        env.advance("30m")  # the first race's timer wins
        env.signal(run, "go", "now")  # the second race: a pending signal wins at once
        assert run.result() == ["timer", "signal", "now"]
        assert flows.SEEN.count("timer") >= 2  # replayed after each sleep: the same winner
        assert set(flows.SEEN) == {"timer", "signal"}
        export = export_run(env.store, run.run_id)
    flows.SEEN.clear()
    assert replay(export).ending == "returned"
    assert flows.SEEN == ["timer", "signal"]


def test_an_async_workflow_awaits_first_of(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_async)
    workflow_env.advance("1m")
    workflow_env.signal(run, "go", 1)
    assert run.result() == {"key": 0, "index": 0, "kind": "signal", "value": 1, "doubled": 6}


def test_first_of_refuses_what_cannot_race(workflow_env: WorkflowEnv) -> None:
    @workflow(name="race_bad")
    def bad() -> None:
        first_of("soon")

    @workflow(name="race_none")
    def none() -> None:
        first_of()

    for flow in (bad, none):
        run = workflow_env.start(flow)
        workflow_env.run_until_idle()
        record = workflow_env.store.get_run(run.run_id)
        assert record.status == "failed" and "InvalidArguments" in (record.error or "")
    assert issubclass(InvalidInput, Exception)


def test_asyncio_wait_first_completed_is_a_race(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_asyncio_wait)
    workflow_env.advance("5m")
    workflow_env.signal(run, "go", "yes")
    assert run.result() == {"winner": "signal", "value": "yes", "pending": 1}
    assert _races(workflow_env, run.run_id) == ["signal:go | timer:3600s"]
    slept = workflow_env.start(flows.race_asyncio_wait)
    assert slept.result() == {"winner": "sleep", "value": None, "pending": 1}


def test_asyncio_wait_with_a_timeout_races_a_step(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_asyncio_wait_timeout)
    assert run.result() == [True, 10, False]
    assert _races(workflow_env, run.run_id) == ["step:first_async_double | signal:go | timer:3600s"]


def test_asyncio_wait_for_times_out_durably(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.race_wait_for, 600)
    workflow_env.advance("1m")
    workflow_env.signal(run, "go", "soon")
    assert run.result() == "got soon"
    late = workflow_env.start(flows.race_wait_for, 600)
    assert late.result() == "timed out"
    assert _races(workflow_env, late.run_id) == ["signal:go | timer:600s"]


def test_the_guide_example_runs() -> None:
    with WorkflowEnv() as env:
        example = guide_example("The first of several")
        approve = example["approve_order"]
        assert env.start(approve, "vip-7").result() == {"decided_by": "credit", "decision": "approved"}
        cancelled = env.start(approve, "someone")
        env.signal(cancelled, "cancel", "changed my mind")  # pending before the race begins: it wins
        assert cancelled.result() == {"cancelled": "changed my mind"}
        manual = env.start(approve, "someone")
        env.advance("1h")
        assert manual.result() == {"decided_by": "credit", "decision": "manual review"}
