"""A run's page shows its event keys and latest values (``set_event``), over the ASGI app in process."""

from __future__ import annotations

import pytest

from tests.testing import event_flows as flows
from tests.unit.test_web_tags import TOKEN, get
from workflows.testing import WorkflowEnv

pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")


def test_the_run_page_shows_a_table_of_event_values(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    app = create_app(TOKEN)
    run = workflow_env.start(flows.order, 3)
    plain = workflow_env.start(flows.none)
    run.result(), plain.result()
    status, body = get(app, f"/runs/{run.run_id}")
    assert status == 200 and 'id="event-values"' in body
    table = body[body.index('id="event-values"'):body.index("</table>", body.index('id="event-values"'))]
    assert "<td>stage</td><td><pre>&#34;done&#34;</pre></td>" in table
    assert "<td>value</td>" in table and "&#34;n&#34;: 30" in table
    status, body = get(app, f"/runs/{plain.run_id}")
    assert status == 200 and 'id="event-values"' not in body
