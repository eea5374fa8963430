"""The events and progress example of the guide (``examples/progress.py``), with the kit."""

from __future__ import annotations

from examples import progress
from workflows import get_event, read_stream
from workflows.testing import WorkflowEnv


def test_a_client_reads_the_imports_progress_and_confirms(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(progress.import_rows, "s3://bucket/rows.csv", 3)
    assert run.get_event("stage") == "awaiting confirmation"  # the kit runs until it waits
    assert get_event(run.run_id, "rows", timeout=0) == 303
    page = read_stream(run.run_id)
    assert page.entries == [{"batch": 0, "rows": 100}, {"batch": 1, "rows": 201}, {"batch": 2, "rows": 303}]
    assert (page.next_offset, page.ended) == (3, False)
    workflow_env.signal(run, "confirm", True)
    assert run.result() == {"rows": 303, "confirmed": True}
    assert read_stream(run.run_id, page.next_offset).ended
