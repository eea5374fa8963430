"""Fork and rerun on the in-memory ports: outcomes below the fork position are reused, ops
from it run again, the new run is linked, and histories that cannot be copied are refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.replay.ports import memory_engine
from tests.replay.test_replay import drain
from workflows import FatalError, hook, parallel, sleep, step, wait_for_signal, workflow
from workflows.client import signal_run
from workflows.core.background import forks
from workflows.core.engine import Engine
from workflows.core.model.records import RunStatus
from workflows.core.model.registry import get_workflow, scope
from workflows.core.storage.timeline import run_history
from workflows.errors import ForkRefused

RAN: list[str] = []
BROKEN: set[str] = set()


@step
def fork_a(x: int) -> int:
    RAN.append(f"a{x}")
    return x + 1


@step
def fork_b(x: int) -> int:
    RAN.append(f"b{x}")
    if "b" in BROKEN:
        raise FatalError("b is broken")
    return x * 2


@step(inline=True)
def fork_c(x: int) -> int:
    RAN.append(f"c{x}")
    return x + 100


@workflow
def fork_chain(x: int) -> int:
    a = fork_a(x)
    b = fork_b(a)
    return fork_c(b)


@workflow
def fork_with_signal(x: int) -> Any:
    a = fork_a(x)
    got = wait_for_signal("go")
    return [fork_c(a), got]


@workflow
def fork_with_hook(x: int) -> Any:
    a = fork_a(x)
    h = hook("approve")
    return [fork_c(a), h.wait()]


@workflow
def fork_with_fan_out(x: int) -> Any:
    a = fork_a(x)
    both = parallel(fork_b.s(a), fork_b.s(a + 1))
    return fork_c(sum(both))


@workflow
def fork_sleeper(x: int) -> Any:
    a = fork_a(x)
    sleep(60)
    return fork_c(a)


@workflow
def fork_child(x: int) -> int:
    sleep(60)
    return x * 3


@workflow
def fork_parent(x: int) -> Any:
    child = fork_child.start(x)
    return [fork_a(x), child.result()]


@pytest.fixture()
def engine() -> Any:
    RAN.clear()
    BROKEN.clear()
    with scope():
        yield memory_engine()


def run(engine: Engine, name: str, *args: Any) -> str:
    run_id, _ = engine.create_run(get_workflow(name), json.dumps([list(args), {}]))
    drain(engine)
    return run_id


def result(engine: Engine, run_id: str) -> Any:
    record = engine.store.get_run(run_id)
    assert record.status == RunStatus.COMPLETED, record.error
    return json.loads(record.result or "null")


def test_a_fork_reuses_the_outcomes_below_its_position_and_reruns_the_rest(engine: Engine) -> None:
    original = run(engine, "fork_chain", 1)
    assert result(engine, original) == 104 and RAN == ["a1", "b2", "c4"]
    RAN.clear()
    fork_id = forks.fork_run(engine, original, 1)
    drain(engine)
    assert result(engine, fork_id) == 104
    assert RAN == ["b2", "c4"]  # op 0 (fork_a) was copied, not run
    fork = engine.store.get_run(fork_id)
    args = engine.store.get_run(original).args
    assert (fork.forked_from, fork.forked_at, fork.workflow, fork.args) == (original, 1, "fork_chain", args)
    assert [e.kind for e in run_history(engine.store, fork_id) if e.is_outcome] == ["step", "step", "step"]


def test_a_fork_at_zero_runs_everything_and_at_the_end_runs_nothing_again(engine: Engine) -> None:
    original = run(engine, "fork_chain", 1)
    RAN.clear()
    assert result(engine, _fork(engine, original, 0)) == 104 and RAN == ["a1", "b2", "c4"]
    RAN.clear()
    assert result(engine, _fork(engine, original, 3)) == 104 and RAN == []


def _fork(engine: Engine, run_id: str, at: int, **kw: Any) -> str:
    fork_id = forks.fork_run(engine, run_id, at, **kw)
    drain(engine)
    return fork_id


def test_rerun_starts_a_failed_run_again_from_its_failed_step(engine: Engine) -> None:
    BROKEN.add("b")
    original = run(engine, "fork_chain", 1)
    assert engine.store.get_run(original).status == RunStatus.FAILED
    assert forks.rerun_position(engine.store, engine.store.get_run(original)) == 1
    BROKEN.clear()  # the fix is deployed
    RAN.clear()
    fork_id = forks.rerun(engine, original)
    drain(engine)
    assert result(engine, fork_id) == 104 and RAN == ["b2", "c4"]
    assert engine.store.get_run(fork_id).forked_at == 1
    with pytest.raises(ForkRefused, match="only a failed run can be rerun"):
        forks.rerun(engine, fork_id)


def test_one_idempotency_key_makes_one_fork(engine: Engine) -> None:
    original = run(engine, "fork_chain", 1)
    first = forks.fork_run(engine, original, 2, idempotency_key="fix-1")
    again = forks.fork_run(engine, original, 2, idempotency_key="fix-1")
    assert first == again
    drain(engine)
    assert result(engine, first) == 104


def test_a_fork_past_the_first_op_without_an_outcome_is_refused(engine: Engine) -> None:
    sleeping = run(engine, "fork_sleeper", 1)
    assert engine.store.get_run(sleeping).status == RunStatus.SUSPENDED
    with pytest.raises(ForkRefused, match="op 1 has no recorded outcome"):
        forks.fork_run(engine, sleeping, 2)
    for bad in (-1, True, "1"):
        with pytest.raises(ForkRefused, match="must be an int"):
            forks.fork_run(engine, sleeping, bad)  # type: ignore[arg-type]
    RAN.clear()
    fork_id = _fork(engine, sleeping, 1)  # a live run can be forked below its first open op
    assert engine.store.get_run(fork_id).status == RunStatus.SUSPENDED and RAN == []


def test_received_signals_are_copied(engine: Engine) -> None:
    original = run(engine, "fork_with_signal", 1)
    signal_run(engine, original, "go", {"n": 7})
    drain(engine)
    assert result(engine, original) == [102, {"n": 7}]
    assert result(engine, _fork(engine, original, 2)) == [102, {"n": 7}]
    waiting = _fork(engine, original, 1)  # the signal wait runs again: the fork waits for its own signal
    assert engine.store.get_run(waiting).status == RunStatus.SUSPENDED


def test_hooks_and_fan_outs_are_not_copied(engine: Engine) -> None:
    hooked = run(engine, "fork_with_hook", 1)
    with pytest.raises(ForkRefused, match="op 1 is a hook"):
        forks.fork_run(engine, hooked, 2)
    assert engine.store.get_run(_fork(engine, hooked, 1)).status == RunStatus.SUSPENDED  # a hook of its own
    fanned = run(engine, "fork_with_fan_out", 1)
    assert result(engine, fanned) == 110
    with pytest.raises(ForkRefused, match="op 1 is a fan-out"):
        forks.fork_run(engine, fanned, 2)
    assert result(engine, _fork(engine, fanned, 1)) == 110


def test_a_child_is_copied_only_once_it_has_ended(engine: Engine) -> None:
    parent = run(engine, "fork_parent", 1)
    assert engine.store.get_run(parent).status == RunStatus.SUSPENDED  # waits for the sleeping child
    with pytest.raises(ForkRefused, match="op 0 is the start of child run .* which has not ended"):
        forks.fork_run(engine, parent, 1)
    engine.clock.advance(61)  # type: ignore[attr-defined]
    drain(engine)
    assert result(engine, parent) == [2, 3]
    RAN.clear()
    fork_id = _fork(engine, parent, 2)  # the child's start and fork_a reused; the child's result read again
    assert result(engine, fork_id) == [2, 3] and RAN == []
