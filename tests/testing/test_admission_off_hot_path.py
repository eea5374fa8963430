"""Admission off the hot path (engine III, item 4): a resume of a run that carries no gate (no
start time, no debounce window, no workflow limit, a worker that serves every code version) makes
no call into ``workflows.core.admission``; one check of what the run carries decides it. Calls are
counted with the interpreter's profiler, whatever calls them."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.testing import delay_flows, workflow_limit_flows
from workflows import RunStatus, sleep, step, wait_for_signal, workflow
from workflows.settings import Settings
from workflows.testing import WorkflowEnv

ADMISSION = str(Path(__file__).resolve().parents[2] / "workflows" / "core" / "admission")


@step(name="hot_path_double")
def double(x: int) -> int:
    return 2 * x


@workflow(name="hot_path_plain")
def plain(x: int) -> int:
    """Steps, a durable sleep, a signal and an end: every kind of resume but a gate."""
    y = double(x)
    sleep("1m")
    z = wait_for_signal("go", timeout="1h")
    return double(y) + int(z)


class AdmissionCalls:
    """The functions of the admission room called while it is entered, by name (every thread)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(ADMISSION):
            self.names.append(f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_name}")

    def __enter__(self) -> AdmissionCalls:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


@pytest.fixture
def env() -> Iterator[WorkflowEnv]:
    with WorkflowEnv() as kit:
        yield kit


def test_a_run_without_a_gate_makes_no_call_into_admission_in_any_resume(env: WorkflowEnv) -> None:
    run = env.start(plain, 5)
    with AdmissionCalls() as calls:
        env.advance("2m")
        run.signal("go", 1)
        env.run_until_idle()
    assert run.status() == RunStatus.COMPLETED and run.result() == 21
    assert calls.names == []


def test_a_delayed_run_and_a_limited_run_pass_their_gates(env: WorkflowEnv) -> None:
    delayed = env.apply_async(delay_flows.report, args=("d",), delay="1m")
    limited = [env.start(workflow_limit_flows.two_at_a_time, f"l{i}") for i in range(3)]
    with AdmissionCalls() as calls:
        env.run_until_idle()
    assert delayed.status() == RunStatus.COMPLETED
    assert {r.status() for r in limited} == {RunStatus.COMPLETED}
    assert {"gates.pass_gates", "delayed.hold_delayed", "workflow_slots.admit",
            "workflow_slots.release"} <= set(calls.names)


def test_a_worker_that_serves_some_versions_asks_at_every_resume() -> None:
    with WorkflowEnv(settings=Settings(code_version="v1", serve_versions=("v1",))) as kit:
        run = kit.start(plain, 1)
        with AdmissionCalls() as calls:
            kit.advance("2m")
            run.signal("go", 0)
            kit.run_until_idle()
        assert run.result() == 4
    assert calls.names.count("deferral.refusal") >= 3  # its first resume, after its sleep, after the signal
