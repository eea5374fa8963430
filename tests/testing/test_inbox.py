"""A run's inbox: the update requests and signals sent to it and not taken yet (an operator's view)."""

from __future__ import annotations

import pytest

from tests.testing import inbox_flows as flows
from workflows.core.background.update_requests import send_update
from workflows.core.model.embed import embed
from workflows.core.model.records import EventRecord, OpKind, event_seq
from workflows.core.ops.inbox import taken_signals, waiting
from workflows.errors import RunNotFound
from workflows.testing import WorkflowEnv


def inbox(env: WorkflowEnv, run_id: str) -> list[tuple[str, str, str | None]]:
    return [(w.kind, w.name, w.payload) for w in waiting(env.store, run_id)]


def test_the_inbox_lists_what_waits_and_drops_what_the_run_took(workflow_env: WorkflowEnv) -> None:
    env = workflow_env
    run = env.start(flows.takes_two)
    assert run.waiting() == []
    update_id, _ = send_update(env.engine, run.run_id, "note", "n1")
    for value in ("g1", "g2", "g3"):
        env.signal(run, "go", value)
    env.signal(run, "extra", 1)
    # Updates first (the run handles them at its next op), then signals by the store's order.
    assert inbox(env, run.run_id) == [("update", "note", '"n1"'), ("signal", "go", '"g1"'),
                                      ("signal", "go", '"g2"'), ("signal", "go", '"g3"'),
                                      ("signal", "extra", "1")]
    assert run.waiting()[0].key == update_id
    env.run_until_idle()  # handled the update; took g1 by its wait and g2 by its race; waits for "done"
    assert run.status() == "suspended"
    assert inbox(env, run.run_id) == [("signal", "go", '"g3"'), ("signal", "extra", "1")]
    env.signal(run, "done")
    assert run.result() == ["g1", "g2", ["n1"]]
    assert inbox(env, run.run_id) == [("signal", "go", '"g3"'), ("signal", "extra", "1")]  # never taken


def test_signals_are_taken_by_waits_and_races_only() -> None:
    def record(kind: OpKind, status: str, data: str | None) -> EventRecord:
        return EventRecord(run_id="r", seq=event_seq(1), kind=kind.value, status=status, at=0.0, data=data)

    history = [record(OpKind.SIGNAL, "received", embed({"key": "a#1#x"}, "1")),
               record(OpKind.SIGNAL, "timed_out", None),
               record(OpKind.FIRST_OF, "received", embed({"index": 0, "kind": "signal", "signal": "b#2#y"}, "2")),
               record(OpKind.FIRST_OF, "fired", embed({"index": 1, "kind": "timer"}, "null")),
               record(OpKind.STEP, "completed", '{"key":"not a signal"}'),
               EventRecord(run_id="r", seq=event_seq(2, 0), kind=OpKind.SIGNAL.value, status="received", at=0.0,
                           data=embed({"key": "an attempt, not an outcome"}, "1"))]
    assert taken_signals(history) == {"a#1#x", "b#2#y"}


def test_an_unknown_run_has_no_inbox(workflow_env: WorkflowEnv) -> None:
    with pytest.raises(RunNotFound):
        waiting(workflow_env.store, "no-such-run")



def test_runs_show_lists_what_waits(workflow_env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    from workflows.cli import commands as cli

    run = workflow_env.start(flows.takes_two)
    send_update(workflow_env.engine, run.run_id, "note", {"text": "n" * 300}, update_id="u-1")
    workflow_env.signal(run, "go", "g1")
    assert cli.main(["runs", "show", run.run_id]) == 0
    out = capsys.readouterr().out
    waiting_part = out[out.index("waiting (sent, not taken yet):"):out.index("\nevents:")].splitlines()[1:]
    assert [line.split()[:3] for line in waiting_part] == [["update", "note", "u-1"],
                                                           ["signal", "go", run.waiting()[1].key]]
    assert waiting_part[0].endswith("...") and '"g1"' in waiting_part[1]  # long payloads are cut
    workflow_env.run_until_idle()
    workflow_env.signal(run, "done")
    run.result()
    assert cli.main(["runs", "show", run.run_id]) == 0
    assert "waiting (sent, not taken yet)" not in capsys.readouterr().out
