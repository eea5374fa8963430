"""An async workflow with async steps, end to end on a real worker (threads pool)."""

from __future__ import annotations

import pytest

from tests.e2e import async_flows as flows

pytestmark = pytest.mark.e2e


def test_an_async_workflow_runs_on_a_real_worker(cluster) -> None:
    run = flows.async_e2e_order.start(5)
    assert run.result(timeout=60) == {"bumped": 11, "squared": 121, "fan": [0, 2, 4],
                                      "threads": ["workflows-step-loop"]}  # every async body ran on the step loop
    steps = [(s["name"], s["status"]) for s in run.steps()]
    assert steps == [("async_e2e_double", "completed"), ("async_e2e_inc", "completed"),
                     ("sync_e2e_square", "completed")]
    kinds = [e["type"].split("_")[0] for e in run.events() if e["type"].startswith(("sleep", "parallel"))]
    assert kinds == ["sleep", "parallel"]  # the gather is one durable fan-out
