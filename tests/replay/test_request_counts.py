"""Store requests of simple runs on the in-memory store, which makes the requests the DynamoDB
store would make, one by one: a regression in reads (or writes) per step fails here."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable

import pytest

from tests.replay import replay_flows as flows
from workflows.core.engine import Engine
from workflows.core.model.records import RunStatus
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="request-count-tests-hook-secret-0123456789")


def run_counting(workflow: str, n: int, *, in_place: bool) -> Counter[str]:
    """Run ``workflow(n)`` to its end, every message delivered once; the requests by name."""
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    counts: Counter[str] = Counter()

    def count(name: str, apply: Callable[[], Any]) -> Any:
        counts[name] += 1
        return apply()

    transport = RecordingTransport({None} if in_place else set())
    engine = Engine(store, transport, SETTINGS, clock=clock)
    run_id, _ = engine.create_run(get_workflow(workflow), json.dumps([[n], {}]))
    store.interceptor = count
    for _ in range(100):
        steps, resumes = list(transport.steps), list(transport.resumes)
        transport.clear()
        if not steps and not resumes:
            break
        for message in steps:
            run_worker_task(engine, lambda m=message: execute_step(engine, m, redelivered=False))
        for resume in resumes:
            run_worker_task(engine, lambda r=resume: engine.receive_resume(r, first_delivery=True))
    store.interceptor = None
    assert store.get_run(run_id).status == RunStatus.COMPLETED
    return counts


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "sent"])
def test_ten_dispatched_steps_read_no_history(in_place: bool) -> None:
    counts = run_counting(flows.replay_ten.name, 10, in_place=in_place)
    # The first resume uses the run its fresh message carries: a claim's condition confirms it, or one
    # read before a dispatch; a step sent as a message reads the run again (cancelled? moved on?).
    # Steps in place run under one claim of the run, the last one's outcome written by the end; a sent
    # step is marked in flight before its send.
    if in_place:
        assert counts == {"claim run": 1, "record event": 9, "finish run": 1}
    else:
        assert counts == {"read run": 11, "advance run": 10, "record event": 10, "finish run": 1}


def test_ten_inline_steps_cost_one_write_each_and_one_claim() -> None:
    counts = run_counting(flows.replay_ten_inline.name, 10, in_place=False)
    assert counts == {"claim run": 1, "record event": 9, "finish run": 1}


def test_a_fan_out_reads_its_branches_once_and_no_history() -> None:
    counts = run_counting(flows.replay_fan.name, 5, in_place=True)
    # a branch reads no run item: the first resume confirms the run its message carried (one read before
    # its dispatch), and the branch that completes the join reads the run to resume it
    assert counts == {"read run": 2, "advance run": 1, "record branch": 5, "join": 5, "record event": 1,
                      "read branches": 1, "finish run": 1}
