"""A sent step's outcome carries the next step's dispatch (``core.replay.marks``): the message leaves after
one write, and the run item's cursor moves after the send. These tests open each window that
ordering leaves (a crash between the write and the send; a cursor that did not move after the send)
and check that nothing is sent twice, no update takes a step's position, and the run ends right.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

import pytest

from tests.unit.chain_flows import BODIES, DURING_THE_FIRST_BODY, chain_add, chain_with_notes
from tests.waiting import wait_for
from workflows.core.background.sweeper import reconcile
from workflows.core.background.update_requests import send_update
from workflows.core.engine import Engine
from workflows.core.model.records import ResumeMessage, RunStatus, StepMessage, event_seq
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.errors import Throttled
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="sent-step-marks-tests-hook-secret-0123456789")


class Crash(Exception):
    """The worker process dies here."""


class Deployment:
    """One worker process that sends every step (none runs in place), over the in-memory store."""

    def __init__(self, settings: Settings = SETTINGS) -> None:
        BODIES.clear()
        self.clock = ManualClock()
        self.store = MemoryStore(settings, self.clock)
        self.transport = RecordingTransport(set())
        self.engine = Engine(self.store, self.transport, settings, clock=self.clock)
        self.run_id, _ = self.engine.create_run(get_workflow(chain_with_notes.name), json.dumps([[3], {}]))
        self.requests: list[str] = []
        self.fail: dict[str, type[Exception]] = {}
        self.before: dict[str, Callable[[], None]] = {}  # once, before the next request of that name
        self.store.interceptor = self._intercept

    def _intercept(self, name: str, apply: Callable[[], Any]) -> Any:
        self.requests.append(name)
        if name in self.fail:
            raise self.fail.pop(name)("injected")
        if name in self.before:
            self.before.pop(name)()
        return apply()

    def resumes(self) -> None:
        """Deliver every queued resume message once."""
        resumes, self.transport.resumes[:] = list(self.transport.resumes), []
        for message in resumes:
            run_worker_task(self.engine, lambda m=message: self.engine.receive_resume(m, first_delivery=True))

    def sent(self) -> list[StepMessage]:
        """The step messages sent since the last call."""
        steps, self.transport.steps[:] = list(self.transport.steps), []
        return steps

    def deliver(self, message: StepMessage, *, redelivered: bool = False) -> None:
        run_worker_task(self.engine, lambda: execute_step(self.engine, message, redelivered=redelivered))

    def finish(self) -> dict[str, Any]:
        """Deliver what is queued until the run ends; its result."""
        for _ in range(50):
            steps = self.sent()
            for message in steps:
                self.deliver(message)
            if not steps and not self.transport.resumes:
                break
            self.resumes()
        run = self.store.get_run(self.run_id)
        assert run.status == RunStatus.COMPLETED, run
        return json.loads(run.result or "null")  # type: ignore[no-any-return]


def first_step(deployment: Deployment) -> StepMessage:
    """Start the run: its first resume sends step 0."""
    deployment.resumes()
    (message,) = deployment.sent()
    assert message.pos == 0
    return message


def test_the_next_step_leaves_after_the_outcomes_one_write_and_the_cursor_follows() -> None:
    deployment = Deployment()
    message = first_step(deployment)
    deployment.requests.clear()
    deployment.deliver(message)
    (following,) = deployment.sent()
    assert following.pos == 1
    writes = [name for name in deployment.requests if not name.startswith(("read", "get", "query", "list"))]
    assert writes == ["record event", "advance run"]  # the send came between them (test_request_minimum)
    record = deployment.store.get_outcome(deployment.run_id, 0)
    assert record is not None and record.next_waiting is not None and record.next_waiting["name"] == chain_add.name
    assert deployment.store.get_run(deployment.run_id).cursor == 1
    deployment.deliver(following)
    assert deployment.finish() == {"total": 3, "notes": []}


def test_a_crash_between_the_outcome_and_the_send_is_recovered_once_by_the_lease() -> None:
    deployment = Deployment()
    message = first_step(deployment)

    def crash(_: StepMessage) -> None:
        raise Crash("the worker died before the send")

    deployment.transport.send_step = crash  # type: ignore[method-assign]
    with pytest.raises(Crash):
        deployment.deliver(message)
    del deployment.transport.send_step  # the next process sends
    assert deployment.store.get_outcome(deployment.run_id, 0) is not None  # the outcome is kept
    deployment.clock.advance(SETTINGS.lease_seconds + 1)
    assert reconcile(deployment.engine) == 1
    deployment.resumes()
    (resent,) = deployment.sent()
    assert (resent.pos, resent.resent) == (1, True)
    deployment.deliver(resent)
    assert deployment.finish() == {"total": 3, "notes": []}
    assert BODIES == {0: 1, 1: 1, 2: 1}  # step 0 never ran again


def lagging(deployment: Deployment) -> StepMessage:
    """Deliver step 0; its cursor's move after the send fails: the run item still says op 0."""
    message = first_step(deployment)
    deployment.fail["advance run"] = Throttled
    deployment.deliver(message)
    (following,) = deployment.sent()
    assert following.pos == 1 and deployment.store.get_run(deployment.run_id).cursor == 0
    return following


def test_a_resume_while_the_cursor_lags_sends_nothing_again() -> None:
    deployment = Deployment()
    following = lagging(deployment)
    deployment.transport.send_resume(ResumeMessage(deployment.run_id))  # a late or duplicate resume
    deployment.resumes()
    assert deployment.sent() == []  # step 1 is in flight: its record's mark says so
    deployment.deliver(following)
    assert deployment.finish() == {"total": 3, "notes": []}
    assert BODIES == {0: 1, 1: 1, 2: 1}


def test_a_duplicate_of_the_previous_step_while_the_cursor_lags_sends_nothing_again() -> None:
    deployment = Deployment()
    first = lagging(deployment)
    deployment.deliver(StepMessage(chain_add.name, deployment.run_id, 0, 1, json.dumps([[0, 0], {}])))
    assert deployment.sent() == []  # its outcome lost to the recorded one: nothing follows
    deployment.deliver(first)
    assert deployment.finish() == {"total": 3, "notes": []}
    assert BODIES[1] == BODIES[2] == 1


def test_an_update_while_the_cursor_lags_never_takes_the_steps_position() -> None:
    deployment = Deployment()
    following = lagging(deployment)
    send_update(deployment.engine, deployment.run_id, "note", "x", "u1")
    deployment.transport.send_resume(ResumeMessage(deployment.run_id))  # a resume meets the request
    deployment.resumes()
    assert deployment.sent() == []
    deployment.deliver(following)
    assert deployment.finish() == {"total": 3, "notes": ["x"]}
    step_one = deployment.store.get_event(deployment.run_id, event_seq(1))
    assert step_one is not None and step_one.kind == "step" and step_one.name == chain_add.name
    assert BODIES == {0: 1, 1: 1, 2: 1}


def test_a_recovery_while_the_cursor_lags_resends_the_marked_step() -> None:
    deployment = Deployment()
    lagging(deployment)  # step 1's message is lost with its worker
    deployment.clock.advance(SETTINGS.lease_seconds + 1)
    assert reconcile(deployment.engine) == 1
    deployment.resumes()
    (resent,) = deployment.sent()
    assert (resent.pos, resent.resent) == (1, True)
    assert deployment.store.get_run(deployment.run_id).cursor == 1
    deployment.deliver(resent)
    assert deployment.finish() == {"total": 3, "notes": []}


def test_a_lease_renewal_due_after_the_cursor_followed_a_stale_read_sends_the_next_step() -> None:
    """Seed 71343: step 1's worker read the run (cursor 0) before step 0's worker moved the cursor
    to 1. Its replay's lease renewal came due and named cursor 0: refused, the resume wrote step 1's
    outcome and stopped, sending nothing; the run waited for its lease to expire."""
    deployment = Deployment()
    message = first_step(deployment)
    stale = deployment.store.get_run(deployment.run_id)  # step 1's worker reads the run here...
    deployment.deliver(message)  # ...then step 0's worker records, sends step 1 and moves the cursor
    (following,) = deployment.sent()
    assert (following.pos, stale.cursor, deployment.store.get_run(deployment.run_id).cursor) == (1, 0, 1)
    # The replay's read of the run's signals is slow: its lease is due for renewal after it.
    deployment.before["read signals"] = lambda: deployment.clock.advance(SETTINGS.lease_seconds / 2)
    run_worker_task(deployment.engine, lambda: execute_step(deployment.engine, following, redelivered=False,
                                                            run=stale))
    assert "read signals" not in deployment.before  # the slow read happened in the replay
    (after,) = deployment.sent()
    assert after.pos == 2 and deployment.store.get_run(deployment.run_id).lease_expires_at is not None
    deployment.deliver(after)
    assert deployment.finish() == {"total": 3, "notes": []}
    assert BODIES == {0: 1, 1: 1, 2: 1}


def test_a_step_sent_while_the_cursor_lags_renews_the_runs_lease_while_it_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The cursor's move after step 1's send failed, so the run item still says op 0. Step 1's
    heartbeat named cursor 1 and every renewal was refused: a step longer than the lease was left
    to recovery, which sends it again while it runs."""
    deployment = Deployment(dataclasses.replace(SETTINGS, lease_seconds=0.3))  # a renewal every 0.1 s
    following = lagging(deployment)
    renewals: list[bool] = []

    def body() -> None:  # longer than the lease: until the heartbeat has renewed it twice
        wait_for(lambda: len(renewals) >= 2, 10, poll=0.02, what="two lease renewals while step 1 runs")

    monkeypatch.setitem(DURING_THE_FIRST_BODY, 1, [body])
    renew = deployment.store.renew_lease

    def recorded(*args: Any, **kwargs: Any) -> bool:
        renewals.append(renew(*args, **kwargs))
        return renewals[-1]

    monkeypatch.setattr(deployment.store, "renew_lease", recorded)
    deployment.deliver(following)
    assert len(renewals) >= 2 and all(renewals), renewals
    assert deployment.finish() == {"total": 3, "notes": []}
