"""Async steps and async workflows on the in-memory ports (the testing kit): every op kind
awaited, asyncio.gather as one durable fan-out, failures, retries, timeouts, replay and
non-determinism, awaits that are not durable, and sync and async code mixed."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.replay import async_flows as flows
from workflows import RunFailed, workflow
from workflows.core.execution.step_loop import StepLoop
from workflows.core.model.records import OpKind
from workflows.core.storage.timeline import run_history
from workflows.errors import StepTimeout
from workflows.export import export_run
from workflows.testing import WorkflowEnv, redefinable, replay


@pytest.fixture(autouse=True)
def _reset() -> None:
    flows.RAN.clear()
    flows.SEEN.clear()
    flows.THREADS.clear()
    flows.VARIANT[:] = ["async_fetch"]


def ops(env: WorkflowEnv, run_id: str) -> list[tuple[int, str, str | None, str]]:
    """The run's op outcomes: position, kind, name, status."""
    return [(e.pos, e.kind, e.name, e.status) for e in run_history(env.store, run_id) if e.is_outcome]


def run_every_op(env: WorkflowEnv, workflow: object, key: str) -> str:
    run = env.start(workflow, key)
    env.advance("1h")
    env.resume_hook(run, "approve", "yes")
    env.signal(run, "go", "now")
    assert run.result() == {"a": 10, "b": 11, "cd": [20, 30], "decision": "yes", "signal": "now", "e": [3, 40],
                            "child": 110}
    return run.run_id


def test_an_async_workflow_awaits_every_op_kind(workflow_env: WorkflowEnv) -> None:
    run_id = run_every_op(workflow_env, flows.async_every_op, "k1")
    kinds = [kind for _, kind, _, _ in ops(workflow_env, run_id)]
    assert kinds == [OpKind.STEP, OpKind.STEP, OpKind.SLEEP, OpKind.PARALLEL, OpKind.HOOK, OpKind.STEP,
                     OpKind.HOOK_WAIT, OpKind.SIGNAL, OpKind.PARALLEL, OpKind.CHILD, OpKind.CHILD_RESULT]
    # Replays ran no step twice: each body ran once, though the run resumed many times.
    assert flows.RAN == {"fetch1": 1, "add10+1": 1, "fetch2": 1, "fetch3": 1, "add1+2": 1, "fetch4": 1,
                         "fetch11": 1}
    # Async bodies ran on the process's step loop, not in the resuming thread.
    assert flows.THREADS >= {"workflows-step-loop"}


def test_an_async_workflow_records_the_history_of_its_sync_twin(workflow_env: WorkflowEnv) -> None:
    async_ops = ops(workflow_env, run_every_op(workflow_env, flows.async_every_op, "k2"))
    sync_ops = ops(workflow_env, run_every_op(workflow_env, flows.sync_every_op, "k3"))
    assert async_ops == sync_ops  # same positions, kinds, names: gather is parallel(..., return_exceptions=True)
    assert (3, OpKind.PARALLEL, "2 branches", "completed") in async_ops


@pytest.mark.parametrize(("return_exceptions", "expected"), [
    (False, "failed: step 'async_refuse' failed: FatalError: refused 6"),
    (True, [50, "StepFailed", 70]),
])
def test_a_failed_branch_of_a_gather(workflow_env: WorkflowEnv, return_exceptions: bool, expected: object) -> None:
    run = workflow_env.start(flows.async_gather_failure, return_exceptions)
    assert run.result() == expected
    [(pos, kind, name, status)] = ops(workflow_env, run.run_id)
    assert (pos, kind, name, status) == (0, OpKind.PARALLEL, "3 branches", "completed")
    assert flows.RAN == {"fetch5": 1, "fetch7": 1}  # every branch ran, as asyncio.gather lets them


def test_an_async_step_is_retried_by_its_policy(workflow_env: WorkflowEnv) -> None:
    injected = workflow_env.fail_step(flows.async_fetch, times=2, error=ConnectionError("down"))
    run = workflow_env.start(flows.async_retried)
    assert run.result() == 80
    assert injected.raised == 2 and flows.RAN == {"fetch8": 1}
    [fetch] = workflow_env.steps(run)
    assert (fetch.name, fetch.status, fetch.attempts) == ("async_fetch", "completed", 3)


def test_a_timed_out_async_step_is_cancelled(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.async_timeout)
    assert run.result() == "step 'async_slow' failed: StepTimeout: step 'async_slow' ran longer than its timeout " \
                           "of 0.2s (its task was cancelled)"
    for _ in range(100):  # the cancel reaches the body on the loop thread
        if flows.SEEN:
            break
        threading.Event().wait(0.01)
    assert flows.SEEN == ["cancelled"]


def test_a_changed_async_workflow_fails_with_non_determinism(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.async_switching)
    workflow_env.advance(1)  # ran the first step, now sleeps
    flows.VARIANT[:] = ["async_refuse"]
    with pytest.raises(RunFailed, match="NonDeterminismError: non-deterministic workflow at position 0: "
                                        "history has 'step async_fetch', code called 'step async_refuse'"):
        run.result()


@pytest.mark.parametrize(("workflow", "message"), [
    (flows.async_awaits_io, r"NonDurableAwait: an async workflow awaited the event loop's call_later\(\)"),
    (flows.async_awaits_bare_yield, r"NonDurableAwait: an async workflow awaited a bare yield"),
    (flows.async_gathers_coroutines, r"NonDurableAwait: an async workflow awaited a task of the coroutine _helper\(\)"),
    (flows.async_forgets_await, r"NotAwaited: an async workflow returned without awaiting step 'async_fetch'"),
])
def test_an_await_that_is_not_durable_fails_the_run(workflow_env: WorkflowEnv, workflow: object,
                                                      message: str) -> None:
    run = workflow_env.start(workflow)
    with pytest.raises(RunFailed, match=message):
        run.result()


def test_durable_calls_awaited_in_a_helper_coroutine_and_a_repeated_gathered_call(
        workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.async_nested, 3)
    assert run.result() == [10, 30, 30]
    assert [kind for _, kind, _, _ in ops(workflow_env, run.run_id)] == [OpKind.STEP, OpKind.PARALLEL]
    assert flows.RAN == {"fetch1": 1, "fetch3": 1}


def test_a_sync_step_of_an_async_workflow_may_run_its_own_event_loop(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.async_calls_loop_running_steps, 2)
    assert run.result() == [4, 20, 40]  # asyncio.run in an inline step: the workflow's loop is not its loop


def test_an_async_step_called_outside_a_workflow_is_a_plain_coroutine() -> None:
    assert asyncio.run(flows.async_fetch(4)) == 40  # type: ignore[arg-type]
    assert flows.RAN == {"plain fetch4": 1}


def test_the_step_loop_runs_bodies_of_many_threads_at_once() -> None:
    loop = StepLoop()
    inside, most = [0], [0]

    async def body(i: int) -> int:
        inside[0] += 1  # only the loop thread touches these
        most[0] = max(most[0], inside[0])
        await asyncio.sleep(0.05)
        inside[0] -= 1
        return i

    results: dict[int, int] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, loop.run(body, [i], {}, None, "b")))
               for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: i for i in range(20)}
    assert most[0] > 1  # the bodies overlapped on the one loop


def test_the_step_loop_times_out_with_step_timeout() -> None:
    async def forever() -> None:
        await asyncio.Event().wait()

    with pytest.raises(StepTimeout, match="'f' ran longer than its timeout of 0.05s"):
        StepLoop().run(forever, [], {}, 0.05, "f")



def test_an_exported_async_run_replays_clean_and_so_does_its_sync_twin_s_history() -> None:
    with WorkflowEnv() as env:
        run_id = run_every_op(env, flows.async_every_op, "k4")
        export = export_run(env.store, run_id)
    flows.RAN.clear()
    report = replay(export)  # the testing kit's replayer drives the async function too
    assert (report.ops, report.ending) == (11, "returned") and flows.RAN == {}  # no step body ran
    with WorkflowEnv() as env:
        twin = export_run(env.store, run_every_op(env, flows.sync_every_op, "k5"))
    with redefinable():  # the sync workflow rewritten as an async one: the same history replays clean
        workflow(name="sync_every_op")(flows.async_every_op.definition.fn)
        assert replay(twin).ending == "returned"
