"""Failures keep their type with real worker processes, beat and the moto server: a sent step's
declared error (raised again after its retry) is rebuilt from the JSON the worker recorded and
caught by type in the workflow, an undeclared one carries its cause chain, and the replay after a
sleep raises the same again."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e import failure_flows as flows
from tests.e2e.flows import counter_dir
from workflows.core.model.failures import parse

pytestmark = pytest.mark.e2e


def test_a_sent_steps_declared_failure_is_caught_by_type(cluster, store) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    run = flows.e2e_fail_caught.start(tag)
    result = run.result(timeout=60)
    assert result == {"declined": ["E2eDeclined", "card declined", 7],
                      "chained": ["RuntimeError", [["builtins.RuntimeError", None], ["builtins.ValueError", "cause"]]]}
    assert (counter_dir() / f"{tag}-declined").read_text() == "xx"  # retried once, then failed for good
    failed = [e for e in store.read_history(run.run_id) if e.kind == "step" and e.is_outcome]
    assert [e.status for e in failed] == ["failed", "failed"]
    failure = parse(failed[0].data)
    assert failure is not None and failure.declared == "tests.e2e.failure_flows.E2eDeclined"
    assert failure.state == {"args": ["card declined"], "attrs": {"balance": 7}}
    assert "in e2e_fail_charge" in failure.chain[0].traceback  # recorded by the worker that ran it
    steps = run.steps()
    assert steps[1]["failure"]["chain"][1]["type"] == "ValueError"
