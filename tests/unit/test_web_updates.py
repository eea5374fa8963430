"""A run's page renders a history with handled updates (``update`` op records), over the ASGI app in process."""

from __future__ import annotations

import pytest

from tests.testing import update_flows as flows
from tests.unit.test_web_tags import TOKEN, get
from workflows.testing import WorkflowEnv

pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")


def test_the_run_page_shows_a_run_with_updates(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    app = create_app(TOKEN)
    run = workflow_env.start(flows.echo)
    assert run.update("note", "x") == 1
    workflow_env.signal(run, "go", "yes")
    run.result()
    status, body = get(app, f"/runs/{run.run_id}")
    assert status == 200 and "note" in body
