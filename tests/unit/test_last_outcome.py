"""A one-step run at 3 writes and no read (issue 26 item 3): the fresh first resume uses the run its
message carries, and the end carries the last step's outcome. What keeps both safe, on the in-memory
store (which evaluates the same write plans as the DynamoDB store)."""

from __future__ import annotations

import json
from typing import Any

from tests.replay import replay_flows as flows
from workflows.core.engine import Engine
from workflows.core.model.records import (
    EventRecord,
    ResumeMessage,
    RunEnding,
    RunRecord,
    RunStatus,
    event_seq,
    with_last_outcome,
)
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.core.storage.timeline import run_history
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="last-outcome-tests-hook-secret-0123456789abcdef")


def setup() -> tuple[Engine, MemoryStore, RecordingTransport]:
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    transport = RecordingTransport({None})
    return Engine(store, transport, SETTINGS, clock=clock), store, transport


def outcome(run_id: str, pos: int, data: str) -> EventRecord:
    return EventRecord(run_id=run_id, seq=event_seq(pos), kind="step", status="completed", at=1.0,
                       name="replay_double", data=data)


def test_a_claim_is_refused_at_an_op_marked_in_flight_for_a_message() -> None:
    """A resume that read the run before another one sent op 0 must not run op 0 in place: the end of
    that resume would carry an outcome while the sent copy records its own."""
    engine, store, _ = setup()
    run_id, _ = engine.create_run(get_workflow(flows.replay_ten.name), "[[1],{}]")
    waiting = {"kind": "step", "name": "replay_double"}
    assert store.advance_run(run_id, 0, waiting)
    assert not store.claim_run(run_id, 0, "late-resume", waiting)
    assert store.claim_run(run_id, 1, "next-resume", waiting)  # a later op is free to claim


def test_an_end_carries_the_outcome_only_while_its_resume_holds_the_claim() -> None:
    engine, store, _ = setup()
    run_id, _ = engine.create_run(get_workflow(flows.replay_ten.name), "[[1],{}]")
    waiting = {"kind": "step", "name": "replay_double"}
    assert store.claim_run(run_id, 0, "r1", waiting)
    assert not store.advance_run(run_id, 1, waiting)  # no other resume moves on under r1's live claim
    engine.clock.advance(SETTINGS.lease_seconds + 60)  # (ManualClock) r1 stalled past its lease
    assert store.advance_run(run_id, 1, waiting)  # another resume moved on: the claim is released
    assert store.finish_run(run_id,
                            RunEnding("completed", result="2", owner="r1", last=outcome(run_id, 0, "2"))) is None
    assert store.claim_run(run_id, 2, "r2", waiting)
    ended = store.finish_run(run_id, RunEnding("completed", result="4", owner="r2", last=outcome(run_id, 2, "4")))
    assert ended is not None and ended.last_outcome == outcome(run_id, 2, "4")
    assert store.read_history(run_id) == []  # kept on the run item, merged by every reader of the history
    assert [e.pos for e in run_history(store, run_id)] == [2]
    assert [e.pos for e in with_last_outcome(ended, [outcome(run_id, 0, "2")])] == [0, 2]


def test_a_fresh_resume_of_a_run_cancelled_before_its_delivery_runs_no_step() -> None:
    """The message carries the run as created; the stored run was asked to cancel meanwhile: the claim's
    condition refuses the carried run, the resume reads the stored one and cancels it."""
    engine, store, transport = setup()
    run_id, _ = engine.create_run(get_workflow(flows.replay_ten.name), "[[1],{}]")
    (message,) = transport.resumes
    assert message.fresh is not None
    engine.request_cancel(run_id)
    flows.RAN.clear()
    run_worker_task(engine, lambda: engine.receive_resume(message, first_delivery=True))
    assert store.get_run(run_id).status == RunStatus.CANCELLED
    assert flows.RAN == {}


def test_a_fresh_resume_never_trusts_the_arguments_its_message_carries() -> None:
    engine, store, transport = setup()
    run_id, _ = engine.create_run(get_workflow(flows.replay_ten.name), "[[3],{}]")
    (message,) = transport.resumes
    assert message.fresh is not None
    message.fresh.args = "[[1],{}]"  # not what the run was created with
    run_worker_task(engine, lambda: engine.receive_resume(message, first_delivery=True))
    run = store.get_run(run_id)
    assert (run.status, json.loads(run.result or "null")) == (RunStatus.COMPLETED, 0)
    assert [e.pos for e in run_history(store, run_id) if e.is_outcome] == [0, 1, 2]


def test_a_resume_message_for_an_unknown_run_runs_nothing() -> None:
    engine, store, transport = setup()
    run_id, _ = engine.create_run(get_workflow(flows.replay_ten.name), "[[1],{}]")
    (message,) = transport.resumes
    assert message.fresh is not None
    message.fresh.run_id = "not-stored"
    flows.RAN.clear()
    run_worker_task(engine, lambda: engine.receive_resume(ResumeMessage("not-stored", fresh=message.fresh),
                                                          first_delivery=True))
    assert flows.RAN == {} and store.find_run("not-stored") is None
    assert [d["run_id"] for _, d in transport.dead_letters] == ["not-stored"]


def start_fan_out(engine: Engine, transport: RecordingTransport, workflow: str, args: str,
                  **fields: Any) -> tuple[str, list[Any]]:
    """Create a run and deliver its first resume; the run's id and the branch messages it sent. Tagged
    by default: a tag item is written without a TTL, so the run's end sends it to the retention sweep."""
    fields.setdefault("tags", {"swept": "yes"})
    run_id, _ = engine.create_run(get_workflow(workflow), args, **fields)
    (first,) = transport.resumes
    transport.clear()
    run_worker_task(engine, lambda: engine.receive_resume(first, first_delivery=True))
    branches = [m for m in transport.steps if m.branch is not None]
    transport.clear()
    return run_id, branches


def cancel_and_sweep(engine: Engine, store: MemoryStore, transport: RecordingTransport, run_id: str) -> RunRecord:
    """Cancel the run (its resumes delivered), then let the retention sweep stamp it; the ended run."""
    from workflows.core.storage.retention import retain_ended_runs

    engine.request_cancel(run_id)  # a fan-out or race in flight: a resume acts on the cancel at once
    for resume in transport.resumes:
        run_worker_task(engine, lambda r=resume: engine.receive_resume(r, first_delivery=True))
    run = store.get_run(run_id)
    assert run.status == RunStatus.CANCELLED
    engine.clock.advance(SETTINGS.lease_seconds + 1)  # type: ignore[attr-defined]
    assert retain_ended_runs(engine) == 1
    return run


def join_lasts(store: MemoryStore, join: str, until: Any) -> bool:
    """Every item of a join carries a TTL, none earlier than ``until`` (the run's: the sweep's stamp, or
    the later expiry an item is written with)."""
    ttls = [i.get("retain_until") for (j, _), i in store.joins.items.items() if j.startswith(join)]
    return bool(ttls) and all(ttl is not None and ttl >= until for ttl in ttls)


def test_a_branch_of_an_ended_run_writes_nothing_without_its_ttl() -> None:
    """A branch reads no run item: one delivered after its run was cancelled and stamped by the retention
    sweep finds its join closed (every slot and counter there, with the run's TTL): its result's put loses,
    and every item of the join carries the run's TTL."""
    from workflows.core.ops.fanout import join_id
    from workflows.core.ops.steps import execute_step

    engine, store, transport = setup()
    run_id, branches = start_fan_out(engine, transport, flows.replay_fan.name, "[[3],{}]")
    assert [m.branch.index for m in branches] == [0, 1, 2]
    run_worker_task(engine, lambda: execute_step(engine, branches[0], redelivered=False))
    run = cancel_and_sweep(engine, store, transport, run_id)
    for late in branches[1:]:
        run_worker_task(engine, lambda m=late: execute_step(engine, m, redelivered=False))
    join = join_id(run_id, 0)
    assert join_lasts(store, join, run.retain_until)
    assert [r.index for r in store.branch_results(join, 3)] == [0]  # closed slots hold no outcome


def test_a_branch_of_a_run_that_ended_unswept_writes_items_that_outlast_it() -> None:
    """A run with nothing written without a TTL (no tag, key, hook, chain or bucket) ends out of the
    retention index: no sweep closes its join, and a late branch's items expire from their own write,
    later than the run's TTL."""
    from workflows.core.ops.fanout import join_id
    from workflows.core.ops.steps import execute_step
    from workflows.core.storage.retention import retain_ended_runs

    engine, store, transport = setup()
    run_id, branches = start_fan_out(engine, transport, flows.replay_fan.name, "[[3],{}]", tags=None)
    engine.request_cancel(run_id)
    for resume in transport.resumes:
        run_worker_task(engine, lambda r=resume: engine.receive_resume(r, first_delivery=True))
    run = store.get_run(run_id)
    assert run.status == RunStatus.CANCELLED and run.retain_until is not None
    engine.clock.advance(SETTINGS.lease_seconds + 1)  # type: ignore[attr-defined]
    assert retain_ended_runs(engine) == 0  # not in the index
    for late in branches:
        run_worker_task(engine, lambda m=late: execute_step(engine, m, redelivered=False))
    assert join_lasts(store, join_id(run_id, 0), run.retain_until)


def test_a_fresh_resume_starts_no_child_for_a_run_that_changed() -> None:
    """A child's creation is written through the engine, outside the replay's guarded store: the run the
    fresh message carried is confirmed first, so a run cancelled before its first delivery starts none."""
    engine, store, transport = setup()
    run_id, _ = engine.create_run(get_workflow(flows.replay_child_first.name), "[[2],{}]")
    (message,) = transport.resumes
    engine.request_cancel(run_id)
    run_worker_task(engine, lambda: engine.receive_resume(message, first_delivery=True))
    assert store.get_run(run_id).status == RunStatus.CANCELLED
    assert store.find_run(f"{run_id}.0") is None


def test_a_step_candidate_of_a_cancelled_race_writes_nothing_without_its_ttl() -> None:
    """A ``first_of`` race's step candidates are branches of a join too: the sweep closes that join
    (its width from the race's name), so a candidate delivered after the run was cancelled and
    stamped loses its put and leaves no item without the run's TTL (simulator seed 11209)."""
    from tests.testing import first_flows
    from workflows.core.ops.fanout import join_id
    from workflows.core.ops.steps import execute_step

    engine, store, transport = setup()
    run_id, (candidate,) = start_fan_out(engine, transport, first_flows.race_step.name, "[[900],{}]")
    run = cancel_and_sweep(engine, store, transport, run_id)
    run_worker_task(engine, lambda: execute_step(engine, candidate, redelivered=False))
    join = join_id(run_id, 0)
    assert join_lasts(store, join, run.retain_until)
    assert store.branch_results(join, 1) == []  # the closed slot holds no outcome


def test_a_step_candidate_that_ends_after_its_race_leaves_the_run_alone() -> None:
    """The timer won the race and the run went on to wait elsewhere: the losing step's late result must
    not lease the run (no resume follows such a wake: the reconciler would recover the run, a recovery
    counted towards its limit, once per race lost this way; simulator seed 52911)."""
    from tests.testing import first_flows
    from workflows.core.background.sweeper import fire_due_timers
    from workflows.core.ops.steps import execute_step

    engine, store, transport = setup()
    run_id, (candidate,) = start_fan_out(engine, transport, first_flows.race_step_then_wait.name, "[[5],{}]")
    engine.clock.advance(6)  # type: ignore[attr-defined]
    assert fire_due_timers(engine) == 1
    for resume in transport.resumes:  # the timer wins; the run waits for "done"
        run_worker_task(engine, lambda r=resume: engine.receive_resume(r, first_delivery=True))
    transport.clear()
    waiting = store.get_run(run_id)
    assert (waiting.status, waiting.cursor, waiting.lease_expires_at) == (RunStatus.SUSPENDED, 1, None)
    run_worker_task(engine, lambda: execute_step(engine, candidate, redelivered=False))  # the late loser
    after = store.get_run(run_id)
    assert (after.status, after.cursor, after.lease_expires_at) == (RunStatus.SUSPENDED, 1, None)
    assert transport.resumes == []
