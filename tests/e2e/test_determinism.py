"""Deterministic helpers, the replay-safe logger and completion criteria with real worker processes,
beat and the moto server: values recorded once and the same after a hop and a sleep, each line
logged once, and a quorum fan-out decided once while a slow branch ends after the decision."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e import det_flows as flows
from tests.e2e.flows import counter_dir
from tests.waiting import wait_for
from workflows.core.model.records import OpKind
from workflows.core.ops.fanout import join_id

pytestmark = pytest.mark.e2e


def test_values_are_recorded_once_and_each_line_logged_once(cluster, store) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    run = flows.det_e2e_values.start(tag)
    result = run.result(timeout=60)
    assert result["echoed"] == result["taken"]  # the replays after the step and the sleep took the same
    assert result["later"] - result["taken"][2] >= 1
    values = [e for e in store.read_history(run.run_id) if e.kind == OpKind.VALUE.value]
    assert [e.name for e in values] == ["uuid4", "random", "now", "now"]
    worker = cluster["worker"]
    wait_for(lambda: f"det-e2e {tag} woke" in worker.output(), 10, what="the last line is logged")
    lines = [line for line in worker.output().splitlines() if f"det-e2e {tag} " in line]
    assert len(lines) == 3, lines  # took, echoed, woke: once each across at least two replays
    assert f"took {result['taken'][0]}" in lines[0]


def test_a_quorum_fan_out_ignores_a_branch_that_ends_after_the_decision(cluster, store) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:10]
    run = flows.det_e2e_quorum.start(tag, ["fast", "slow", "fail", "fast"])
    result = run.result(timeout=60)
    assert result["results"] == {"0": 0, "3": 30} and set(result["failed"]) <= {2}
    assert 1 in result["unfinished"]
    assert (counter_dir() / f"{tag}-slow-done").exists()  # the slow branch ended (during the sleep)
    wait_for(lambda: any(r.index == 1 for r in store.branch_results(join_id(run.run_id, 0), 4)), 10,
             what="the slow branch's result is recorded")
    assert store.tally_branch(join_id(run.run_id, 0), 1, False)[0] >= {0, 1, 3}  # tallied, never counted
