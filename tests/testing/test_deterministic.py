"""``workflows.now()``, ``uuid4()`` and ``random()``: recorded once inside a workflow (one history
record each), the same on every replay; the standard library's outside a workflow."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from tests.testing import det_flows as flows
from tests.testing.guide_blocks import guide_example
from workflows import now, random, sleep, uuid4, workflow
from workflows.core.model.records import OpKind
from workflows.export import export_run
from workflows.testing import WorkflowEnv, redefinable, replay


@pytest.fixture(autouse=True)
def _reset_seen() -> None:
    flows.SEEN.clear()


def test_values_are_recorded_once_and_replayed(workflow_env: WorkflowEnv) -> None:
    began = workflow_env.now
    run = workflow_env.start(flows.det_values)
    result = run.result()
    firsts = {seen for label, seen in flows.SEEN if label == "before"}
    assert len(flows.SEEN) >= 2 and len(firsts) == 1  # every replay (after the sleep at least) saw the same
    when, ident, draw = firsts.pop()
    assert when == began and when.tzinfo == timezone.utc  # the engine's (virtual) clock
    assert result["uuid"] == result["echoed"] == str(ident) and result["random"] == draw and 0 <= draw < 1
    assert result["later"] - result["when"] == 3600  # taken after the sleep, on the virtual clock
    values = [e for e in workflow_env.store.read_history(run.run_id) if e.kind == OpKind.VALUE.value]
    assert [(e.pos, e.name, e.status) for e in values] == [
        (0, "now", "recorded"), (1, "uuid4", "recorded"), (2, "random", "recorded"), (5, "now", "recorded")]


def test_a_value_reaches_an_inline_step_once_recorded(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.det_inline_values, 3)
    result = run.result()
    history = workflow_env.store.read_history(run.run_id)
    values = {e.pos: e.data for e in history if e.kind == OpKind.VALUE.value}
    assert len(set(result)) == 3 and [f'"{hex_}"' for hex_ in result] == [values[p] for p in (0, 2, 4)]


def test_an_exported_run_replays_clean() -> None:
    with WorkflowEnv() as env:
        run = env.start(flows.det_values)
        run.result()
        export = export_run(env.store, run.run_id)
    assert replay(export).ending == "returned"


def test_a_helper_in_place_of_another_is_non_determinism(workflow_env: WorkflowEnv) -> None:
    @workflow(name="det_changes")
    def first() -> str:
        uuid4()
        sleep("1m")
        return "done"

    run = workflow_env.start(first)
    workflow_env.driver.settle()
    with redefinable():
        @workflow(name="det_changes")
        def second() -> str:
            random()
            sleep("1m")
            return "done"

        with pytest.raises(Exception, match="value uuid4") as failed:
            run.result()
    assert "value random" in str(failed.value)


def test_outside_a_workflow_they_are_the_standard_library() -> None:
    assert isinstance(uuid4(), uuid.UUID) and uuid4() != uuid4()
    assert 0 <= random() < 1
    assert abs((now() - datetime.now(timezone.utc)).total_seconds()) < 5


def test_the_guide_example_runs(workflow_env: WorkflowEnv) -> None:
    example = guide_example("Time, UUIDs and random numbers in workflow code")
    result = workflow_env.start(example["invoice"], "ana").result()
    assert result.startswith("sent ") and " issued 2027-01-15T08:0" in result
