"""A claim answered late: its lease ran from when the request was built, so the resume claims again
before it runs a step in place (simulator seed 3728: a claim applied 72 s after it was sent left a lease
that had already expired, a second resume claimed the run, and both ran the step)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable

from tests.replay import replay_flows as flows
from workflows.core.engine import Engine
from workflows.core.model.records import RunStatus
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import run_worker_task
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="slow-claim-tests-hook-secret-0123456789abcdef")


def run_with_claims_answered_after(delays: list[float], *, ends: bool = True) -> Counter[str]:
    """Drive a one-step run in place; the n-th claim's answer comes ``delays[n]`` seconds late."""
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    transport = RecordingTransport({None})
    engine = Engine(store, transport, SETTINGS, clock=clock)
    requests: Counter[str] = Counter()
    late = list(delays)

    def intercept(name: str, apply: Callable[[], Any]) -> Any:
        requests[name] += 1
        answer = apply()
        if name == "claim run" and late:
            clock.advance(late.pop(0))  # applied at once, answered late
        return answer

    run_id, _ = engine.create_run(get_workflow(flows.replay_ten.name), json.dumps([[1], {}]))
    store.interceptor = intercept
    for resume in list(transport.resumes):
        run_worker_task(engine, lambda r=resume: engine.receive_resume(r, first_delivery=True))
    store.interceptor = None
    run = store.get_run(run_id)
    if ends:
        assert run.status == RunStatus.COMPLETED
    else:  # left to the lease it holds: recovery resumes it
        assert run.status == RunStatus.RUNNING and run.lease_expires_at is not None
    return requests


def test_a_claim_answered_in_time_is_made_once() -> None:
    assert run_with_claims_answered_after([5.0])["claim run"] == 1


def test_a_claim_answered_after_a_third_of_the_lease_is_made_again_before_the_step_runs() -> None:
    assert run_with_claims_answered_after([30.0])["claim run"] == 2


def test_a_claim_answered_late_every_time_runs_no_step_and_leaves_the_run_to_its_lease() -> None:
    requests = run_with_claims_answered_after([30.0] * 10, ends=False)
    assert requests["claim run"] >= 3 and requests["record event"] == 0
