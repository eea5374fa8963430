"""The exporter reads the DynamoDB store (on the local AWS server) as it reads the memory
store: a history recorded by the kit, written to DynamoDB through the Store port, exports
the same records and branches, and replays clean."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.testing import kit_flows as flows
from workflows.core.model.records import RunRecord
from workflows.export import export_run, load_export
from workflows.testing import WorkflowEnv, replay


def test_an_export_from_dynamodb_matches_and_replays(store: Any) -> None:
    with WorkflowEnv() as env:
        run = env.start(flows.kit_fan, 3)
        run.result()
        recorded = load_export(export_run(env.store, run.run_id))
    source = recorded.run
    store.create_run(RunRecord(source.run_id, source.workflow, "pending", source.created_at, args=source.args))
    for event in recorded.history:
        assert store.record_event(event)
    for join, branches in recorded.branches.items():
        for branch in branches:
            store.record_branch(join, branch.index, branch.data, branch.error)
    exported = export_run(store, source.run_id)
    again = load_export(exported)
    assert [dataclasses.astuple(e) for e in again.history] == [dataclasses.astuple(e) for e in recorded.history]
    assert again.branches == recorded.branches and len(again.branches[f"{source.run_id}#0"]) == 3
    assert replay(exported).ops == 1
