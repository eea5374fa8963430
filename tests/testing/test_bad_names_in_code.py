"""An invalid name in workflow code (a signal or update name that breaks the rules of names) is the
workflow's own bug: the run fails at once with the error on it, not after its recoveries."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from workflows import RunStatus, on_update, wait_for_signal, workflow
from workflows.testing import WorkflowEnv


def _signal() -> Any:
    return wait_for_signal("a b", timeout="1h")


def _update() -> Any:
    on_update("bad name", lambda value: value)
    return wait_for_signal("go", timeout="1h")


@pytest.mark.parametrize(("body", "named"), [(_signal, "signal name 'a b'"), (_update, "update name 'bad name'")])
def test_an_invalid_name_in_workflow_code_fails_the_run_at_once(workflow_env: WorkflowEnv, body: Callable[[], Any],
                                                                 named: str) -> None:
    flow = workflow(name=f"bad_names_{body.__name__.strip('_')}")(body)
    run = workflow_env.start(flow)
    workflow_env.run_until_idle()
    record = workflow_env.store.get_run(run.run_id)
    assert record.status == RunStatus.FAILED and record.recoveries == 0
    assert (record.error or "").startswith(f"InvalidName: {named} is not a valid name")
