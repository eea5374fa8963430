"""Workflow code that swallows a suspension (``except BaseException``, bare ``except``) fails the run loudly."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.integration import robust_flows as flows
from workflows.core.engine import Engine
from workflows.core.model.registry import get_workflow
from workflows.memory import RecordingTransport


@pytest.mark.parametrize("workflow", [flows.swallows_with_except_base, flows.swallows_with_bare_except,
                                      flows.swallows_then_raises, flows.swallows_then_calls_again])
def test_swallowed_suspension_fails_the_run(store, workflow: Any, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    transport = RecordingTransport()
    engine = Engine(store, transport, store.settings)
    run_id, _ = engine.create_run(get_workflow(workflow.name), "[[], {}]")
    with caplog.at_level(logging.ERROR, logger="workflows.engine"):
        engine.resume(run_id)
    run = store.get_run(run_id)
    assert run.status == "failed", (run.status, run.result)
    assert "swallowed a suspension at op 0 (step 'robust_add')" in (run.error or "")
    assert "except BaseException" in (run.error or "") and "bare except" in (run.error or "")
    assert transport.steps == []  # nothing after the swallowed op was dispatched
    assert [r.levelno for r in caplog.records if "swallowed a suspension" in r.getMessage()] == [logging.ERROR]
