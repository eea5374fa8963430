"""An update never takes the position of a step another resume runs (simulator seed 8203 of the
count of 2026-12-05: a duplicate resume, from a read of the run made before the first resume
claimed it, recorded an update at the position of the step the first one was running in place;
that step's record then lost, and the run waited for its lease with its step to run again)."""

from __future__ import annotations

import json
import threading

from tests.unit.chain_flows import BODIES, DURING_THE_FIRST_BODY, chain_with_notes
from workflows.core.background.update_requests import send_update
from workflows.core.engine import Engine
from workflows.core.model.records import ResumeMessage, RunStatus, event_seq, with_last_outcome
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="update-position-race-tests-hook-secret-0123")


def run_with_a_duplicate_resume_during(step: int, steps: int) -> tuple[MemoryStore, str]:
    """Start a chain of ``steps`` steps run in place; while the body of step ``step`` runs, the client
    sends an update and a duplicate resume (from a read of the run made before the first resume claimed
    it) replays the run in another worker thread. Drive the run to its end."""
    BODIES.clear()
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    transport = RecordingTransport({None})  # this worker runs the steps in place
    engine = Engine(store, transport, SETTINGS, clock=clock)
    run_id, _ = engine.create_run(get_workflow(chain_with_notes.name), json.dumps([[steps], {}]))
    stale = store.get_run(run_id)  # as created: what a duplicate resume read before the claim

    def duplicate_resume() -> None:  # another worker thread, while the body runs
        send_update(engine, run_id, "note", "x", "u1")
        other = threading.Thread(target=lambda: run_worker_task(engine, lambda: engine.resume(run_id, run=stale)))
        other.start()
        other.join()

    DURING_THE_FIRST_BODY.clear()
    DURING_THE_FIRST_BODY[step] = [duplicate_resume]
    try:
        for _ in range(10):
            queued = list(transport.resumes)
            transport.resumes.clear()
            for message in queued:
                run_worker_task(engine, lambda m=message: engine.receive_resume(m, first_delivery=True))
            if not queued:
                break
        if not store.get_run(run_id).is_terminal:  # a resume that picks up the update (a wake would send it)
            run_worker_task(engine, lambda: engine.receive_resume(ResumeMessage(run_id), first_delivery=True))
    finally:
        DURING_THE_FIRST_BODY.clear()
    return store, run_id


def test_a_resume_from_a_stale_read_leaves_the_position_of_a_step_run_in_place() -> None:
    store, run_id = run_with_a_duplicate_resume_during(0, 2)
    run = store.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run
    step_zero = store.get_event(run_id, event_seq(0))
    assert step_zero is not None and step_zero.kind == "step"  # the update did not take its position
    # steps run in place are done before the run handles anything (docs/updates.md): it ended first
    assert json.loads(run.result or "null") == {"total": 1, "notes": []}
    assert BODIES == {0: 1, 1: 1}


def test_a_resume_from_a_stale_read_leaves_a_later_step_run_in_place_under_the_claim() -> None:
    # Seed 46307: the claim's cursor stays where the chain began (0) while its resume runs step 2 in
    # place; the duplicate resume's answer passed a check of the cursor alone, and took position 2.
    store, run_id = run_with_a_duplicate_resume_during(2, 3)
    run = store.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run
    history = with_last_outcome(run, store.read_history(run_id))  # the last step's outcome goes with the end
    assert [(e.pos, e.kind) for e in history if e.is_outcome] == [(0, "step"), (1, "step"), (2, "step")]
    assert json.loads(run.result or "null") == {"total": 3, "notes": []}
    assert BODIES == {0: 1, 1: 1, 2: 1}
