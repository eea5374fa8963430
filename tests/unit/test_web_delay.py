"""The dashboard shows delayed runs (their status, start time, the status filter) and each child's
link (detached, or its parent-close policy), over the ASGI app in process."""

from __future__ import annotations

import pytest

from tests.testing import delay_flows as flows
from tests.unit.test_web_tags import TOKEN, get
from workflows.testing import WorkflowEnv

pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")


def test_a_delayed_run_is_shown_and_filtered_as_delayed(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    app = create_app(TOKEN)
    run = workflow_env.apply_async(flows.report, ["x"], delay="2h")
    now = workflow_env.start(flows.report, "now")
    status, body = get(app, f"/runs/{run.run_id}")
    assert status == 200 and 'id="run-status">delayed</span>' in body
    assert 'id="start-at"' in body and "(delayed: cancel it to end it unstarted)" in body
    status, body = get(app, "/runs", "status=delayed")
    assert status == 200 and run.run_id in body and now.run_id not in body
    status, body = get(app, "/runs")
    assert run.run_id in body and ">delayed<" in body  # the count of runs by status has a row for it


def test_the_run_page_names_each_childs_link(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    app = create_app(TOKEN)
    cancelling = workflow_env.start(flows.parent, "cancel")
    detaching = workflow_env.start(flows.detaching_parent)
    child, detached = cancelling.result(), detaching.result()
    _, body = get(app, f"/runs/{cancelling.run_id}")
    assert f'{child}</a> (cancel)' in body
    _, body = get(app, f"/runs/{detaching.run_id}")
    assert f'{detached}</a> (detached)' in body
