"""A store error inside a replay makes the resume fail and retry later; it never fails the run."""

from __future__ import annotations

import uuid
from typing import Any, Callable

import pytest

from persistence import DynamoStore
from persistence.provision import create_tables
from tests.integration import robust_flows as flows
from workflows.core.engine import Engine
from workflows.core.model.records import RunRecord
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step
from workflows.errors import Throttled
from workflows.memory import RecordingTransport


class ThrottlingStore:
    """Delegates to a real store, but raises Throttled from one method the next ``times`` calls."""

    def __init__(self, store: DynamoStore) -> None:
        self.store, self.method, self.left = store, "", 0

    def fail(self, method: str, times: int = 1) -> None:
        self.method, self.left = method, times

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name != self.method:
            return attr

        def throttled(*args: Any, **kwargs: Any) -> Any:
            if self.left > 0:
                self.left -= 1
                raise Throttled(f"{name}: DynamoDB kept throttling") from ConnectionError("too many requests")
            return attr(*args, **kwargs)

        return throttled


@pytest.fixture(scope="module")
def own_settings(settings):  # type: ignore[no-untyped-def]
    own = settings.with_(table_prefix=f"se{uuid.uuid4().hex[:6]}-")
    create_tables(own)
    return own


@pytest.fixture()
def engine(own_settings) -> Engine:  # type: ignore[no-untyped-def]
    return Engine(ThrottlingStore(DynamoStore(own_settings)), RecordingTransport(), own_settings)  # type: ignore[arg-type]


def start(engine: Engine, workflow: Any, *args: Any) -> str:
    run_id, _ = engine.create_run(get_workflow(workflow.name), f"[{list(args)}, {{}}]")
    return run_id


def assert_untouched(engine: Engine, before: RunRecord) -> None:
    after = engine.store.get_run(before.run_id)
    assert after.status == before.status and after.status not in ("failed", "completed")
    assert (after.ended_at, after.error, after.result) == (None, None, None)
    assert after.lease_expires_at is not None  # the lease resumes it later
    assert [e for e in engine.store.read_history(before.run_id) if e.error] == []


def fail_next_resume(engine: Engine, run_id: str, method: str, resume: Callable[[], None] | None = None) -> None:
    """Arm ``method`` to throttle once; the resume must raise it and leave the run as it was."""
    before = engine.store.get_run(run_id)
    engine.store.fail(method)  # type: ignore[attr-defined]
    with pytest.raises(Throttled) as raised:
        (resume or (lambda: engine.resume(run_id)))()
    assert isinstance(raised.value.__cause__, ConnectionError)  # the original error, with its cause
    assert_untouched(engine, before)


def completed(engine: Engine, run_id: str) -> str | None:
    engine.resume(run_id)
    run = engine.store.get_run(run_id)
    assert run.status == "completed", run.error
    return run.result


@pytest.mark.parametrize("workflow", [flows.signal_echo, flows.signal_guarded])
def test_signal_read_throttled(engine: Engine, workflow: Any) -> None:
    run_id = start(engine, workflow)
    engine.store.put_signal(run_id, "go", '"hi"')
    fail_next_resume(engine, run_id, "signals")
    assert completed(engine, run_id) == '"hi"'


def test_hook_creation_throttled(engine: Engine) -> None:
    run_id = start(engine, flows.hook_echo)
    fail_next_resume(engine, run_id, "create_hook")
    engine.resume(run_id)
    assert engine.store.get_run(run_id).status == "suspended"
    assert len(engine.store.hooks_for_run(run_id)) == 1


def test_hook_read_throttled(engine: Engine) -> None:
    run_id = start(engine, flows.hook_echo)
    engine.resume(run_id)
    (hook,) = engine.store.hooks_for_run(run_id)
    engine.store.complete_hook(hook.token_hash, '"approved"')
    engine.wake(run_id)  # as the client does: the woken run holds a lease
    fail_next_resume(engine, run_id, "get_hook")
    assert completed(engine, run_id) == '"approved"'


def test_branch_results_throttled(engine: Engine) -> None:
    run_id = start(engine, flows.fan_in)
    engine.resume(run_id)
    first, last = engine.transport.steps  # type: ignore[attr-defined]
    execute_step(engine, first, redelivered=False)
    # The branch that completes the join resumes the parent; its replay reads the results.
    fail_next_resume(engine, run_id, "branch_results", lambda: execute_step(engine, last, redelivered=False))
    assert completed(engine, run_id) == "[3,7]"


def test_child_start_throttled(engine: Engine) -> None:
    run_id = start(engine, flows.child_parent, 5)
    fail_next_resume(engine, run_id, "create_run")
    engine.resume(run_id)
    assert engine.store.get_run(f"{run_id}.0").status == "pending"


def test_child_end_read_throttled(engine: Engine) -> None:
    # The parent reads how its child ended from its own history (the child's end wrote it there
    # with the wake), never from the child's run item.
    run_id = start(engine, flows.child_parent, 5)
    engine.resume(run_id)
    engine.resume(f"{run_id}.0")  # the child completes and wakes its parent
    fail_next_resume(engine, run_id, "read_history")
    assert completed(engine, run_id) == "5"
