"""Payloads are valid text: a lone surrogate (``"\\ud800"``) is valid JSON but no text (UTF-8 cannot
encode it), so every edge refuses it with a typed error and nothing is stored; what an older version
stored is still shown, escaped, by the run's page."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest

from tests.testing import event_flows, update_flows
from tests.testing import kit_flows as flows
from tests.unit.test_web_tags import TOKEN, get
from workflows import codec, send_signal
from workflows.errors import SerializationError
from workflows.testing import WorkflowEnv

BAD = "\ud800"


@pytest.mark.parametrize("value", [BAD, "\udfff", ["ok", {"k": "a\udc00b"}], {BAD: 1}, "\udc00\ud800"])
def test_the_codec_refuses_a_lone_surrogate_naming_it(value: Any) -> None:
    with pytest.raises(SerializationError, match="lone surrogate"):
        codec.dumps(value, what="payload")


@pytest.mark.parametrize("value", ["\U0001f600", "\\ud800", {"emoji": "a\U0001f600b"}, "plain"])
def test_text_past_u_ffff_and_a_backslash_u_are_text(value: Any) -> None:
    assert codec.loads(codec.dumps(value)) == value


def test_every_edge_refuses_a_lone_surrogate_and_stores_nothing(workflow_env: WorkflowEnv) -> None:
    with pytest.raises(SerializationError, match="lone surrogate"):
        workflow_env.start(flows.kit_echo, BAD)
    assert workflow_env.runs() == []
    waiting = workflow_env.start(update_flows.late_handler)
    workflow_env.run_until_idle()
    with pytest.raises(SerializationError, match="lone surrogate"):
        send_signal(waiting.run_id, "done", BAD)
    with pytest.raises(SerializationError, match="lone surrogate"):
        waiting.update("note", BAD)
    assert waiting.waiting() == []  # no signal or update request stored
    approval = workflow_env.start(flows.kit_approval, "1h")
    workflow_env.driver.settle()  # the hook waits (skipping to its timeout would expire it)
    with pytest.raises(SerializationError, match="lone surrogate"):
        workflow_env.resume_hook(approval, "approve", {"note": BAD})
    workflow_env.resume_hook(approval, "approve", "yes")
    assert approval.result() == "yes"


def test_a_run_page_shows_a_stored_lone_surrogate_escaped(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    run = workflow_env.start(flows.kit_echo, "fine")
    assert run.result() == "fine"
    item = workflow_env.store.runs.items[(run.run_id,)]
    item["result"] = item["args"] = '["\\ud800"]'  # as a version before the check stored it
    status, body = get(create_app(TOKEN), f"/runs/{run.run_id}")
    assert status == 200 and "\\ud800" in body


def test_the_cli_shows_a_stored_lone_surrogate_escaped(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.cli.commands import main

    run = workflow_env.start(event_flows.order, 3)
    run.result()
    for (run_id, seq), item in workflow_env.store.events.items.items():
        if run_id == run.run_id and seq < 0 and item.get("name") == "stage":  # its published event value
            item["data"] = '"\\ud800"'  # as a version before the check stored it
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # a terminal's strict UTF-8 stream
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["runs", "show", run.run_id]) == 0
    out.flush()
    assert "stage" in out.buffer.getvalue().decode() and "\\ud800" in out.buffer.getvalue().decode()  # type: ignore[attr-defined]


def test_printable_keeps_safe_markup_safe_and_escapes_only_what_utf8_cannot_encode() -> None:
    from markupsafe import Markup

    safe = Markup("<form class=signal></form>")
    assert codec.printable(safe) is safe  # a template's safe markup is not escaped again
    assert codec.printable(Markup("<b>\ud800</b>")) == Markup("<b>\\ud800</b>")
    assert codec.printable("a\ud800") == "a\\ud800" and codec.printable(3) == 3
