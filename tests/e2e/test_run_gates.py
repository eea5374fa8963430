"""Workflow limits and debounced starts across a real worker and beat: at most 2 runs of a limited
workflow at once, admitted in start order; starts with one debounce key collapse into one run."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.e2e import run_gate_flows as flows
from tests.e2e.flow_limit_flows import spans
from tests.e2e.test_flow_limits import max_overlap

pytestmark = pytest.mark.e2e


def test_a_workflow_limit_runs_two_at_once_in_start_order(cluster) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    runs = [flows.two_runs_at_once.start(tag, f"r{i}") for i in range(5)]
    assert [run.result(timeout=90) for run in runs] == [f"r{i}" for i in range(5)]
    rows = spans(tag)
    assert len(rows) == 10
    assert max_overlap(rows) == 2
    begins = [label for what, _, label in sorted(rows, key=lambda r: r[1]) if what == "S"]
    # The queued ones in start order: r2 and r3 take the two slots r0 and r1 free (admitted in
    # that order, though their steps may begin in either), r4 only the slot one of them frees.
    assert set(begins[:2]) == {"r0", "r1"} and set(begins[2:4]) == {"r2", "r3"} and begins[4] == "r4"


def test_debounced_starts_collapse_into_one_run_with_the_last_arguments(cluster) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    began = time.time()
    handles = []
    for i in range(3):
        handles.append(flows.debounced_digest.options(debounce="2s", debounce_key=tag)
                       .start(tag, [str(n) for n in range(i + 1)]))
        time.sleep(0.5)  # the time is the test: starts 0.5 s apart, inside the 2 s window
    assert len({h.run_id for h in handles}) == 1
    assert handles[0].result(timeout=60) == ["0", "1", "2"]
    rows = spans(tag)
    assert [(what, label) for what, _, label in rows] == [("S", "0,1,2")]
    assert rows[0][1] - began >= 3.0  # the last start (1 s) + the window (2 s)
    after = flows.debounced_digest.options(debounce="1s", debounce_key=tag).start(tag, ["next"])
    assert after.run_id != handles[0].run_id and after.result(timeout=60) == ["next"]
