"""A fan-out branch whose result is recorded never runs again: not when its message is
redelivered, not when recovery re-sends the fan-out."""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from workflows import parallel, step, workflow
from workflows.core.engine import Engine
from workflows.core.model.records import StepMessage
from workflows.core.model.registry import get_workflow
from workflows.core.ops.fanout import join_id
from workflows.core.ops.steps import execute_step
from workflows.memory import RecordingTransport

RUNS: Counter[tuple[str, int]] = Counter()


@step
def counted_square(tag: str, i: int) -> int:
    RUNS[(tag, i)] += 1
    return i * i


@workflow
def counted_fan_out(tag: str, n: int) -> list[int]:
    return parallel(*(counted_square.s(tag, i) for i in range(n)))


class Stack:
    """An engine over its own tables, a recording transport and a clock the test moves."""

    def __init__(self, settings) -> None:  # type: ignore[no-untyped-def]
        self.clock = [time.time()]
        self.store = DynamoStore(settings, clock=lambda: self.clock[0])
        self.transport = RecordingTransport()
        self.engine = Engine(self.store, self.transport, settings, clock=self)
        self.tag = uuid.uuid4().hex[:8]
        self.run_id, _ = self.engine.create_run(get_workflow(counted_fan_out.name), f'[["{self.tag}", 3], {{}}]')
        self.engine.resume(self.run_id)
        self.branches = self.sent()
        assert sorted(m.branch.index for m in self.branches if m.branch) == [0, 1, 2]

    def now(self) -> float:
        return self.clock[0]

    def sent(self) -> list[StepMessage]:
        messages = list(self.transport.steps)
        self.transport.steps.clear()
        return messages

    def branch(self, index: int) -> StepMessage:
        return next(m for m in self.branches if m.branch is not None and m.branch.index == index)

    def runs(self) -> list[int]:
        return [RUNS[(self.tag, i)] for i in range(3)]

    def recover(self) -> list[StepMessage]:
        """The lease expires; the reconciler claims it and resumes the run as recovery."""
        self.clock[0] += self.store.settings.lease_seconds * 3
        assert self.store.claim_recovery(self.store.get_run(self.run_id)) is not None
        self.engine.resume(self.run_id, recovering=True)
        return self.sent()

    def result(self) -> tuple[str, str | None]:
        run = self.store.get_run(self.run_id)
        return run.status, run.result


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    own = settings.with_(table_prefix=f"fo{uuid.uuid4().hex[:6]}-")
    create_tables(own)  # own tables: the moved clock must not touch other tests' runs
    return own


def test_a_redelivered_branch_with_a_recorded_result_does_not_run_again(own_settings) -> None:  # type: ignore[no-untyped-def]
    s = Stack(own_settings)
    execute_step(s.engine, s.branch(0), redelivered=False)
    execute_step(s.engine, s.branch(0), redelivered=True)
    assert s.runs() == [1, 0, 0]
    execute_step(s.engine, s.branch(1), redelivered=False)
    execute_step(s.engine, s.branch(2), redelivered=False)
    assert s.result() == ("completed", "[0,1,4]")
    execute_step(s.engine, s.branch(1), redelivered=True)  # after the run ended
    assert s.runs() == [1, 1, 1]


def test_recovery_re_sends_only_the_branches_without_a_result(own_settings) -> None:  # type: ignore[no-untyped-def]
    s = Stack(own_settings)
    execute_step(s.engine, s.branch(0), redelivered=False)
    execute_step(s.engine, s.branch(1), redelivered=False)
    resent = s.recover()
    assert [(m.branch.index if m.branch else None, m.resent) for m in resent] == [(2, True)]
    for message in s.branches:  # the lost messages turn up after all
        execute_step(s.engine, message, redelivered=True)
    for message in resent:
        execute_step(s.engine, message, redelivered=True)
    assert s.runs() == [1, 1, 1]
    assert s.result() == ("completed", "[0,1,4]")


def test_a_branch_recorded_but_not_counted_completes_the_join_on_redelivery(own_settings) -> None:  # type: ignore[no-untyped-def]
    s = Stack(own_settings)
    execute_step(s.engine, s.branch(0), redelivered=False)
    execute_step(s.engine, s.branch(1), redelivered=False)
    s.store.record_branch(join_id(s.run_id, 0), 2, "4", None)  # its worker died before counting it
    execute_step(s.engine, s.branch(2), redelivered=True)
    assert s.runs() == [1, 1, 0]
    assert s.result() == ("completed", "[0,1,4]")


def test_recovery_completes_a_join_whose_last_branch_was_not_counted(own_settings) -> None:  # type: ignore[no-untyped-def]
    s = Stack(own_settings)
    execute_step(s.engine, s.branch(0), redelivered=False)
    execute_step(s.engine, s.branch(1), redelivered=False)
    s.store.record_branch(join_id(s.run_id, 0), 2, "4", None)  # its worker died before counting it
    assert s.recover() == []  # nothing to run again
    assert s.runs() == [1, 1, 0]
    assert s.result() == ("completed", "[0,1,4]")
