"""Delayed starts and child policies on real worker processes and beat (moto over HTTP): a run
listed as delayed starts at its time, one cancelled before it never runs, the CLI starts and lists
them; a parent's end closes its children by their policies, a detached child outlives it."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from tests.e2e import delay_flows as flows
from tests.waiting import wait_for
from workflows import RunCancelled, get_run, list_runs
from workflows.cli.commands import main

pytestmark = pytest.mark.e2e


def test_a_delayed_run_starts_at_its_time_and_one_cancelled_before_never_runs(cluster, capsys) -> None:  # type: ignore[no-untyped-def]
    asked = time.time()
    run = flows.greeting.options(delay="4s").start("later")
    at = datetime.now(timezone.utc) + timedelta(seconds=3)
    eta = flows.greeting.apply_async(["eta"], start_at=at)
    doomed = flows.greeting.options(delay="1h").start("never")
    delayed = {r.run_id for r in list_runs(status="delayed")}
    assert {run.run_id, eta.run_id, doomed.run_id} <= delayed
    assert main(["runs", "list", "--status", "delayed"]) == 0
    assert doomed.run_id in capsys.readouterr().out
    doomed.cancel()
    result = run.result(timeout=60)
    assert result["text"] == "hello later" and result["began"] >= asked + 4  # never early
    assert eta.result(timeout=60)["began"] >= at.timestamp()
    with pytest.raises(RunCancelled):
        doomed.result(timeout=30)
    assert doomed.steps() == []
    assert main(["runs", "start", "e2e_delay_greeting", "--args", '["cli"]', "--delay", "2s"]) == 0
    cli_run = get_run(capsys.readouterr().out.strip())
    assert cli_run.status() == "delayed"
    assert main(["runs", "show", cli_run.run_id]) == 0
    assert "(delayed)" in capsys.readouterr().out
    assert cli_run.result(timeout=60)["text"] == "hello cli"


def test_a_parent_closes_its_children_by_their_policies(cluster, capsys) -> None:  # type: ignore[no-untyped-def]
    parent = flows.parent.start()
    children = parent.result(timeout=60)
    handles = {kind: get_run(run_id) for kind, run_id in children.items()}
    wait_for(lambda: handles["cancel"].record().is_terminal and handles["request_cancel"].record().is_terminal,
             60, what="the children with a cancelling policy to end")
    assert handles["cancel"].status() == "cancelled" and handles["request_cancel"].status() == "cancelled"
    assert handles["detached"].result(timeout=60) == "woke"  # it outlived its parent
    assert handles["detached"].parent() is None
    assert handles["abandon"].parent() == parent and handles["default"].parent() == parent
    assert handles["abandon"].status() == handles["default"].status() == "suspended"  # left asleep
    assert main(["runs", "show", parent.run_id]) == 0
    out = capsys.readouterr().out
    assert f"{children['detached']} (detached)" in out and f"{children['cancel']} (cancel)" in out
    for kind in ("abandon", "default"):
        handles[kind].cancel()
