"""Workflow-level concurrency on the virtual clock: at most N live runs of a workflow (per key),
the others waiting in start order, admitted as runs end."""

from __future__ import annotations

import pytest

from tests.testing import workflow_limit_flows as flows
from workflows import RunStatus
from workflows.core.admission.workflow_slots import queue_of
from workflows.core.model.records import RunEnding
from workflows.testing import WorkflowEnv


@pytest.fixture(autouse=True)
def _reset() -> None:
    flows.EVENTS.clear()


def most_at_once(events: list[tuple[str, str, float]]) -> int:
    """The most runs between their "began" and "ended" at one moment (ends first at a tie)."""
    order = sorted(events, key=lambda e: (e[2], e[0] == "began"))
    live = most = 0
    for event, _, _ in order:
        live += 1 if event == "began" else -1
        most = max(most, live)
    return most


def began(label_prefix: str = "") -> list[str]:
    return [label for event, label, _ in flows.EVENTS if event == "began" and label.startswith(label_prefix)]


def test_at_most_n_runs_at_once_and_the_others_start_in_start_order(workflow_env: WorkflowEnv) -> None:
    runs = [workflow_env.start(flows.two_at_a_time, f"r{i}") for i in range(6)]
    workflow_env.advance("1s")
    assert began() == ["r0", "r1"]
    assert [r.status() for r in runs[2:]] == [RunStatus.SUSPENDED] * 4  # queued: parked with a wake timer
    assert [w.holder for w in workflow_env.store.slot_holders(queue_of("workflow:two_at_a_time"))] == \
        [r.run_id for r in runs[2:]]
    workflow_env.run_until_idle()
    assert [r.result() for r in runs] == [f"r{i}" for i in range(6)]
    assert began() == [f"r{i}" for i in range(6)]
    assert most_at_once(flows.EVENTS) == 2
    ends = {label: t for event, label, t in flows.EVENTS if event == "ended"}
    starts = {label: t for event, label, t in flows.EVENTS if event == "began"}
    assert starts["r2"] - starts["r0"] == pytest.approx(10, abs=1)  # admitted when a run ends, not at the backstop
    assert starts["r2"] >= min(ends["r0"], ends["r1"])
    assert workflow_env.store.slot_holders("workflow:two_at_a_time") == []
    assert workflow_env.store.slot_holders(queue_of("workflow:two_at_a_time")) == []


def test_a_limit_per_key_counts_each_key_apart(workflow_env: WorkflowEnv) -> None:
    a1 = workflow_env.start(flows.one_per_customer, "a", "a1")
    a2 = workflow_env.start(flows.one_per_customer, "a", "a2")
    b1 = workflow_env.start(flows.one_per_customer, "b", "b1")
    workflow_env.advance("1s")
    assert sorted(began()) == ["a1", "b1"]
    workflow_env.run_until_idle()
    assert (a1.result(), a2.result(), b1.result()) == ("a1", "a2", "b1")
    assert most_at_once([e for e in flows.EVENTS if e[1].startswith("a")]) == 1


def test_a_cancelled_waiter_leaves_the_queue_and_the_next_one_goes_on(workflow_env: WorkflowEnv) -> None:
    runs = [workflow_env.start(flows.two_at_a_time, f"c{i}") for i in range(4)]
    workflow_env.advance("1s")
    workflow_env.cancel(runs[2])
    workflow_env.advance("1s")
    assert runs[2].status() == RunStatus.CANCELLED
    assert [w.holder for w in workflow_env.store.slot_holders(queue_of("workflow:two_at_a_time"))] == [runs[3].run_id]
    workflow_env.run_until_idle()
    assert began() == ["c0", "c1", "c3"]


def test_a_slot_whose_holder_ended_without_releasing_it_is_freed(workflow_env: WorkflowEnv) -> None:
    store = workflow_env.store
    far = workflow_env.clock.now() + 10**9
    assert store.acquire_slot("workflow:two_at_a_time", 2, "a-run-that-is-gone", far) is not None
    done = workflow_env.start(flows.two_at_a_time, "d0")
    workflow_env.run_until_idle()
    assert done.result() == "d0"
    # Both slots taken by runs that ended without releasing them (the releasing process died):
    assert store.acquire_slot("workflow:two_at_a_time", 2, done.run_id, far) is not None
    assert store.acquire_slot("workflow:two_at_a_time", 2, "another-gone-run", far) is not None
    late = workflow_env.start(flows.two_at_a_time, "d1")
    workflow_env.run_until_idle()
    assert late.result() == "d1"
    assert began() == ["d0", "d1"]


def test_a_waiter_whose_wake_was_lost_is_admitted_by_its_backstop_timer(workflow_env: WorkflowEnv) -> None:
    store = workflow_env.store
    first, second = workflow_env.start(flows.one_chain, "x", 1), workflow_env.start(flows.one_chain, "y", 1)
    workflow_env.advance("1s")
    assert began() == ["x1"]
    # The first run ends, and the process that ended it dies before releasing its slot:
    assert store.finish_run(first.run_id, RunEnding(RunStatus.CANCELLED.value, error="cancelled")) is not None
    workflow_env.run_until_idle()
    assert second.result() == "y"
    assert began() == ["x1", "y1"]
    starts = {label: t for event, label, t in flows.EVENTS if event == "began"}
    assert starts["y1"] - starts["x1"] >= workflow_env.settings.defer_seconds - 1


def test_a_continue_as_new_successor_keeps_its_predecessors_slot(workflow_env: WorkflowEnv) -> None:
    chain = workflow_env.start(flows.one_chain, "k", 3)
    other = workflow_env.start(flows.one_chain, "o", 1)
    workflow_env.run_until_idle()
    assert chain.result() == "k" and other.result() == "o"
    assert began() == ["k3", "k2", "k1", "o1"]  # the chain kept the slot across its runs
    assert most_at_once(flows.EVENTS) == 1


def test_a_run_in_its_debounce_window_holds_up_no_one(workflow_env: WorkflowEnv) -> None:
    slow = workflow_env.apply_async(flows.one_debounced, ["slow"], debounce="1m", debounce_key="k")
    quick = workflow_env.start(flows.one_debounced, "quick")  # created later, not debounced
    workflow_env.advance("1s")
    assert began() == ["quick"]  # the debounced run is not ahead of it in the waiting list
    workflow_env.run_until_idle()
    assert (slow.result(), quick.result()) == ("slow", "quick")
    assert began() == ["quick", "slow"] and most_at_once(flows.EVENTS) == 1


def test_a_run_a_twin_resume_parked_while_this_one_admitted_it_keeps_its_wake_timer(
        workflow_env: WorkflowEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two resumes of one new run race at admission: one is refused (it read the slots while
    another run held the only one) and parks the run with its wake timer just as the other takes
    the slot; the admitted one must not delete that timer, or a failure before its next write
    strands the run: suspended, no lease, no timer. (Found by the simulator, seed 1389.)"""
    from workflows.core.admission.workflow_slots import admit, queued_timer_id
    from workflows.core.model.records import TimerKind, TimerRecord
    from workflows.core.model.registry import get_workflow

    store, engine = workflow_env.store, workflow_env.engine
    handle = workflow_env.start(flows.one_chain, "t", 1)
    read = store.find_run(handle.run_id)  # what both resumes read, before either wrote
    assert read is not None and read.status == RunStatus.PENDING
    parked = TimerRecord(timer_id=queued_timer_id(read.run_id), kind=TimerKind.WAKE.value, run_id=read.run_id,
                         due_at=engine.now() + workflow_env.settings.defer_seconds)
    acquire = store.acquire_slot

    def twin_parks_first(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert store.defer_run(read.run_id, read.wake_seq, parked)  # the refused twin parks the run
        return acquire(*args, **kwargs)

    monkeypatch.setattr(store, "acquire_slot", twin_parks_first)
    assert admit(engine, get_workflow("one_chain"), read) is True
    monkeypatch.setattr(store, "acquire_slot", acquire)
    # The admitted resume now fails before its next write (a throttled advance); its message is acked.
    run = store.find_run(read.run_id)
    assert run is not None and run.status == RunStatus.SUSPENDED and run.lease_expires_at is None
    assert store.timers.get(parked.timer_id) is not None  # its wake timer: what resumes it
    assert workflow_env.transport.take() is not None and workflow_env.transport.take() is None  # acked: none left
    workflow_env.run_until_idle()
    assert handle.result() == "t"
