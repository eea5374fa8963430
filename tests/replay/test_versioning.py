"""Versioning on the in-memory ports: ``patched`` branch points (old histories take the old
path, new runs the new one, retired patches), code-version stamps in non-determinism errors,
and runs a worker cannot serve, which are deferred to another worker instead of failed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.replay.ports import SETTINGS
from tests.replay.test_replay import drain, transport
from workflows import deprecate_patch, patched, sleep, step, workflow
from workflows.core.engine import Engine
from workflows.core.model.records import RunStatus
from workflows.core.model.registry import get_workflow, scope
from workflows.core.ops.steps import run_worker_task
from workflows.core.storage.timeline import run_history
from workflows.errors import InvalidArguments, NonDeterminismError, NotInWorkflow
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

RAN: list[str] = []


@step
def ver_first(x: int) -> int:
    RAN.append("first")
    return x + 1


@step
def ver_old(x: int) -> int:
    RAN.append("old")
    return x * 10


@step
def ver_new(x: int) -> int:
    RAN.append("new")
    return x * 100


@step(inline=True)
def ver_last(x: int) -> int:
    RAN.append("last")
    return x + 2


def engine_with(settings: Settings = SETTINGS, store: MemoryStore | None = None,
                clock: ManualClock | None = None) -> Engine:
    clock = clock or ManualClock()
    return Engine(store or MemoryStore(settings, clock), RecordingTransport(), settings, clock=clock)


def start(engine: Engine, name: str, *args: Any) -> str:
    run_id, _ = engine.create_run(get_workflow(name), json.dumps([list(args), {}]))
    return run_id


def kinds(engine: Engine, run_id: str) -> list[str]:
    return [f"{e.kind} {e.name}" for e in run_history(engine.store, run_id) if e.is_outcome]


def define_v1() -> None:
    @workflow(name="ver_flow")
    def ver_flow(x: int) -> int:
        a = ver_first(x)
        b = ver_old(a)
        sleep(30)
        return ver_last(b)


def define_v2() -> None:
    @workflow(name="ver_flow")
    def ver_flow(x: int) -> int:
        a = ver_first(x)
        b = ver_new(a) if patched("use-new") else ver_old(a)
        sleep(30)
        return ver_last(b)


def define_v3() -> None:
    @workflow(name="ver_flow")
    def ver_flow(x: int) -> int:
        a = ver_first(x)
        deprecate_patch("use-new")
        b = ver_new(a)
        sleep(30)
        return ver_last(b)


def define_v4_patch_removed() -> None:
    @workflow(name="ver_flow")
    def ver_flow(x: int) -> int:
        a = ver_first(x)
        b = ver_new(a)
        sleep(30)
        return ver_last(b)


def finish(engine: Engine, run_id: str) -> Any:
    engine.clock.advance(31)  # type: ignore[attr-defined]
    drain(engine)
    run = engine.store.get_run(run_id)
    assert run.status == RunStatus.COMPLETED, run.error
    return json.loads(run.result or "null")


@pytest.fixture(autouse=True)
def fresh_registry() -> Any:
    RAN.clear()
    with scope(redefine=True):
        yield


def test_a_new_run_takes_the_new_path_and_records_a_marker() -> None:
    engine = engine_with()
    define_v2()
    run_id = start(engine, "ver_flow", 1)
    drain(engine)
    assert finish(engine, run_id) == 202
    assert kinds(engine, run_id) == ["step ver_first", "patch use-new", "step ver_new", "sleep None", "step ver_last"]
    assert "old" not in RAN


def test_a_history_recorded_without_the_patch_takes_the_old_path() -> None:
    engine = engine_with()
    define_v1()
    run_id = start(engine, "ver_flow", 1)
    drain(engine)  # v1 ran ver_first and ver_old, and sleeps
    assert engine.store.get_run(run_id).status == RunStatus.SUSPENDED
    define_v2()  # the deploy
    engine.cache.forget(run_id)
    assert finish(engine, run_id) == 22
    assert kinds(engine, run_id) == ["step ver_first", "step ver_old", "sleep None", "step ver_last"]
    assert "new" not in RAN


def test_an_old_op_in_flight_at_the_patch_point_keeps_the_old_path() -> None:
    engine = engine_with()
    define_v1()
    run_id = start(engine, "ver_flow", 1)
    sent = transport(engine)
    for _ in range(2):  # the first resume dispatches ver_first; its step continues the run and dispatches ver_old
        resumes, steps = list(sent.resumes), list(sent.steps)
        sent.clear()
        for resume in resumes:
            run_worker_task(engine, lambda r=resume: engine.resume(r.run_id))
        for message in steps:
            from workflows.core.ops.steps import execute_step

            run_worker_task(engine, lambda m=message: execute_step(engine, m, redelivered=False))
    run = engine.store.get_run(run_id)
    assert (run.cursor, (run.waiting or {}).get("name")) == (1, "ver_old")  # ver_old is in flight, no outcome
    define_v2()
    engine.cache.forget(run_id)
    run_worker_task(engine, lambda: engine.resume(run_id, recovering=True))  # v2 replays: old path, re-sends ver_old
    assert [m.step for m in sent.steps] == ["ver_old", "ver_old"]
    drain(engine)
    assert finish(engine, run_id) == 22
    assert "new" not in RAN and "patch use-new" not in kinds(engine, run_id)


def test_a_run_that_has_not_reached_the_patch_point_takes_the_new_path() -> None:
    engine = engine_with()

    @workflow(name="ver_flow")
    def ver_flow(x: int) -> int:
        sleep(30)
        return ver_first(x)

    run_id = start(engine, "ver_flow", 1)
    drain(engine)

    @workflow(name="ver_flow")  # the deploy: a patch after the sleep the run waits in
    def ver_flow_v2(x: int) -> int:
        sleep(30)
        return ver_new(x) if patched("p") else ver_first(x)

    assert finish(engine, run_id) == 100
    assert kinds(engine, run_id) == ["sleep None", "patch p", "step ver_new"]


def test_deprecate_patch_consumes_a_recorded_marker_and_records_none() -> None:
    engine = engine_with()
    define_v2()
    patched_run = start(engine, "ver_flow", 1)
    drain(engine)  # v2 recorded the marker and sleeps
    define_v3()  # retired: every run that took the old path has ended
    engine.cache.forget(patched_run)
    assert finish(engine, patched_run) == 202
    fresh_run = start(engine, "ver_flow", 2)
    drain(engine)
    assert finish(engine, fresh_run) == 302
    assert kinds(engine, fresh_run) == ["step ver_first", "step ver_new", "sleep None", "step ver_last"]


def test_removing_a_patch_too_early_fails_naming_both_code_versions() -> None:
    engine = engine_with()
    define_v2()
    run_id = start(engine, "ver_flow", 1)
    drain(engine)
    recorded_by = engine.store.get_run(run_id).code_version
    define_v4_patch_removed()
    replayed_by = engine.code_version("ver_flow")
    assert recorded_by and replayed_by and recorded_by.startswith("src-") and recorded_by != replayed_by
    engine.cache.forget(run_id)
    engine.clock.advance(31)  # type: ignore[attr-defined]
    drain(engine)
    run = engine.store.get_run(run_id)
    assert run.status == RunStatus.FAILED
    assert "NonDeterminismError" in (run.error or "") and "position 1" in (run.error or "")
    assert f"recorded by code version {recorded_by}, replayed by {replayed_by}" in (run.error or "")


def test_patched_answers_once_per_id_and_checks_its_argument() -> None:
    engine = engine_with()
    answers: list[bool] = []

    @workflow(name="ver_twice")
    def ver_twice() -> None:
        answers.extend([patched("a"), patched("a")])
        ver_last(1)

    run_id = start(engine, "ver_twice")
    drain(engine)
    assert answers[:2] == [True, True]
    assert kinds(engine, run_id) == ["patch a", "step ver_last"]
    with pytest.raises(NotInWorkflow):
        patched("a")

    @workflow(name="ver_bad_id")
    def ver_bad_id() -> None:
        patched("")

    bad = start(engine, "ver_bad_id")
    drain(engine)
    assert "InvalidArguments" in (engine.store.get_run(bad).error or "")
    assert issubclass(InvalidArguments, TypeError)


def test_the_configured_code_version_is_stamped_and_named() -> None:
    engine = engine_with(SETTINGS.with_(code_version="2026.12.1"))
    define_v2()
    run_id = start(engine, "ver_flow", 1)
    assert engine.store.get_run(run_id).code_version == "2026.12.1"
    error = NonDeterminismError(3, "step a", "step b", recorded_by="v1", replayed_by="v2")
    assert str(error).endswith("(history recorded by code version v1, replayed by v2)")


# -- runs a worker cannot serve ----------------------------------------------------------------


def test_a_worker_without_the_workflow_defers_the_run_and_one_with_it_completes_it() -> None:
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    engine = engine_with(store=store, clock=clock)
    with scope(redefine=True):
        define_v2()
        run_id = start(engine, "ver_flow", 1)
    # The deploy has not reached this worker: it knows no "ver_flow".
    drain(engine)
    run = store.get_run(run_id)
    assert run.status == RunStatus.SUSPENDED and run.error is None  # not failed
    assert run.lease_expires_at is None and store.timers.get(f"{run_id}#defer") is not None  # a due timer wakes it
    clock.advance(SETTINGS.defer_seconds + 1)
    drain(engine)  # the timer wakes it, this worker defers it again
    assert store.get_run(run_id).status == RunStatus.SUSPENDED and store.get_run(run_id).recoveries == 0
    define_v2()  # a worker with the code
    clock.advance(2 * SETTINGS.defer_seconds + 1)  # the second deferral in a row waits up to twice as long
    drain(engine)
    assert finish(engine, run_id) == 202


def test_a_worker_serves_only_its_versions_and_leaves_the_others() -> None:
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    define_v2()
    old = engine_with(SETTINGS.with_(code_version="v1", serve_versions=("v1",)), store, clock)
    new = engine_with(SETTINGS.with_(code_version="v2", serve_versions=("v2",)), store, clock)
    run_id = start(old, "ver_flow", 1)
    assert store.get_run(run_id).code_version == "v1"
    for resume in transport(old).resumes:  # the first resume reaches a v2 worker
        run_worker_task(new, lambda r=resume: new.resume(r.run_id))
    transport(old).clear()
    assert not transport(new).steps and store.get_run(run_id).status == RunStatus.SUSPENDED
    clock.advance(SETTINGS.defer_seconds + 1)
    drain(old)  # a v1 worker's beat fires the timer; the v1 worker runs it
    assert finish(old, run_id) == 202


def test_a_deferral_that_loses_to_a_wake_replays_and_defers_again() -> None:
    clock = ManualClock()
    store = MemoryStore(SETTINGS, clock)
    engine = engine_with(store=store, clock=clock)
    with scope(redefine=True):
        define_v2()
        run_id = start(engine, "ver_flow", 1)
    deferrals: list[bool] = []

    def wake_first(name: str, apply: Any) -> Any:
        if name == "defer run" and not deferrals:
            deferrals.append(True)
            store.interceptor = None
            store.wake_run(run_id)  # a signal arrived after this resume read the run
            store.interceptor = wake_first
        return apply()

    store.interceptor = wake_first
    run_worker_task(engine, lambda: engine.resume(run_id))
    store.interceptor = None
    run = store.get_run(run_id)
    assert deferrals and run.wake_seq == 1 and run.status == RunStatus.SUSPENDED  # the second try won
    assert store.timers.get(f"{run_id}#defer") is not None


def test_the_pre_deploy_replay_check_accepts_a_patched_change_and_refuses_an_unpatched_one() -> None:
    from workflows.export import export_run
    from workflows.testing.replayer import replay

    engine = engine_with()
    define_v1()
    run_id = start(engine, "ver_flow", 1)
    drain(engine)  # v1 ran ver_first and ver_old, and sleeps
    exported = export_run(engine.store, run_id)
    define_v2()
    assert replay(exported).ops == 3  # ver_first, ver_old (patched() said False), the sleep
    define_v4_patch_removed()
    with pytest.raises(NonDeterminismError, match="position 1: history has 'step ver_old'.*recorded by code version"):
        replay(exported)
