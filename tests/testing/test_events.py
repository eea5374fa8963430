"""Events and progress (issue 27, item 1): set_event / get_event, write_stream / read_stream, in the kit."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from tests.testing import event_flows as flows
from workflows import (
    EventNotSet,
    EventTimeout,
    FatalError,
    InvalidEventKey,
    RunFailed,
    StreamPage,
    get_event,
    read_stream,
)
from workflows.core.ops import events
from workflows.errors import Stalled
from workflows.settings import Settings
from workflows.testing import WorkflowEnv


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv() as kit:
        yield kit


def count_requests(env: WorkflowEnv, name: str, apply_twice: bool = False) -> list[str]:
    """Count the store's requests called ``name`` (applying each twice: a lost response the SDK retried)."""
    seen: list[str] = []

    def intercept(request: str, apply: Callable[[], Any]) -> Any:
        if request == name:
            seen.append(request)
            if apply_twice:
                apply()
        return apply()

    env.store.interceptor = intercept
    return seen


def test_events_are_written_once_and_get_event_returns_the_latest_value(env: WorkflowEnv) -> None:
    writes = count_requests(env, "set event")
    streams = count_requests_too(env, "write stream")
    run = env.start(flows.order, 4)
    assert run.get_event("stage") == "worked"  # the kit settles (up to the sleep), then reads the latest
    assert run.result() == {"value": 40, "last_offset": 2}
    assert len(writes) == 4 and len(streams) == 3  # replays after the step and the sleep wrote nothing again
    assert get_event(run.run_id, "stage", timeout=0) == "done"
    assert run.event_values() == {"stage": "done", "value": {"n": 40, "list": [1, 2]}}
    page = read_stream(run.run_id)
    assert (page.entries, page.next_offset, page.ended) == ([{"done": 0}, {"done": 1}, {"done": 2}], 3, True)
    assert read_stream(run.run_id, 2).entries == [{"done": 2}]
    assert read_stream(run.run_id, 3) == StreamPage([], 3, True)
    assert [e.kind for e in run.history()].count("event") == 4  # the op records; the items are not history


def count_requests_too(env: WorkflowEnv, name: str) -> list[str]:
    """Count a second request name beside the interceptor already installed."""
    seen: list[str] = []
    first = env.store.interceptor

    def intercept(request: str, apply: Callable[[], Any]) -> Any:
        if request == name:
            seen.append(request)
        return first(request, apply)

    env.store.interceptor = intercept
    return seen


def test_a_set_event_whose_response_was_lost_is_recorded_once(env: WorkflowEnv) -> None:
    writes = count_requests(env, "set event", apply_twice=True)
    run = env.start(flows.order, 1)
    assert run.result() == {"value": 10, "last_offset": 2}
    assert len(writes) == 4
    assert run.event_values()["stage"] == "done"


def test_get_event_waits_in_virtual_time_and_times_out(env: WorkflowEnv) -> None:
    run = env.start(flows.waiting)
    assert env.get_event(run, "ready", timeout="1m") is True
    with pytest.raises(EventTimeout):
        env.get_event(run, "answer", timeout="1m")  # no timer is due: the timeout passes
    with pytest.raises(Stalled):
        env.get_event(run, "answer")
    with pytest.raises(EventTimeout, match="answer"):
        get_event(run.run_id, "answer", timeout=0.05, poll=0.01)  # the client's own poll, in real time
    assert read_stream(run.run_id).ended is False
    env.signal(run, "go", "now")
    assert env.get_event(run, "answer") == run.get_event("answer") == "now"


def test_get_event_waits_without_limit_by_default_and_the_cli_looks_once(env: WorkflowEnv,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The two documented defaults: ``get_event(run_id, key)`` (timeout None) waits until the key is
    set; ``workflows runs get-event RUN KEY`` without ``--timeout`` looks once and says so."""
    import threading

    from workflows.cli import commands as cli

    run = env.start(flows.waiting)
    env.driver.settle()
    capsys.readouterr()
    assert cli.main(["runs", "get-event", run.run_id, "answer"]) == 1
    assert f"EventTimeout: run {run.run_id} has not set event 'answer' yet (looked once" in capsys.readouterr().err
    assert cli.main(["runs", "get-event", run.run_id, "answer", "--timeout", "0.05"]) == 1
    assert "did not set event 'answer' within 0.05s" in capsys.readouterr().err
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(get_event(run.run_id, "answer", poll=0.01)), daemon=True)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not got  # still waiting, as no timeout was given
    env.signal(run, "go", "now")
    env.driver.settle()
    waiter.join(10)
    assert got == ["now"]
    with pytest.raises(SystemExit):
        cli.main(["runs", "get-event", "--help"])
    assert "default 0: look once" in " ".join(capsys.readouterr().out.split())


def test_a_run_that_ended_without_the_key_raises_a_clear_error(env: WorkflowEnv) -> None:
    run = env.start(flows.none)
    with pytest.raises(EventNotSet, match="without setting event 'missing'"):
        run.get_event("missing")
    with pytest.raises(EventNotSet):
        get_event(run.run_id, "missing", timeout=5)
    assert run.event_values() == {} and read_stream(run.run_id).entries == []


def test_keys_are_validated(env: WorkflowEnv) -> None:
    for key in ("", "a b", "x" * (events.MAX_KEY_LENGTH + 1), 3):
        with pytest.raises(InvalidEventKey):
            get_event("any", key, timeout=0)  # type: ignore[arg-type]
    run = env.start(flows.bad_key, "no spaces allowed")
    with pytest.raises(RunFailed, match="InvalidEventKey"):
        run.result()


def test_the_stream_refuses_entries_beyond_its_bounds_on_every_replay(env: WorkflowEnv,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "MAX_STREAM_ENTRIES", 3)
    run = env.start(flows.flood, 5, 1)
    assert run.result() == {"written": 3, "refused": [3, "a run's stream holds at most 3 entries"]}
    assert read_stream(run.run_id).entries == ["x", "x", "x"]
    monkeypatch.setattr(events, "MAX_STREAM_BYTES", 25)
    run = env.start(flows.flood, 5, 10)  # "x"*10 is 12 bytes of JSON: the third would pass 25
    result = run.result()
    assert result["written"] == 2 and "at most 25 bytes (24 used, this entry 12)" in result["refused"][1]
    assert len(read_stream(run.run_id).entries) == 2


def test_large_values_go_to_the_payload_bucket() -> None:
    settings = Settings(payload_threshold_bytes=1024, max_payload_bytes=1024 * 1024, hook_secret="s" * 32)
    big = "y" * 3000
    with WorkflowEnv(settings=settings) as env:
        run = env.start(flows.waiting)
        env.signal(run, "go", big)
        assert run.result() == big
        assert run.get_event("answer") == big
        stored = env.store.get_event(run.run_id, events.event_value_seq("answer"))
        assert stored is not None and events.payload_size(stored.data) == len(big) + 2
        assert len(stored.data or "") < 400  # a reference, the object in the run's prefix


def test_the_cli_shows_event_values_and_prints_the_stream(env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    from workflows.cli import commands as cli

    run = env.start(flows.order, 2)
    run.result()
    capsys.readouterr()
    assert cli.main(["runs", "show", run.run_id]) == 0
    out = capsys.readouterr().out
    assert '\nevents:\n  stage                    "done"\n  value                    {"n": 20, "list": [1, 2]}\n' in out
    assert cli.main(["runs", "get-event", run.run_id, "value"]) == 0
    assert capsys.readouterr().out == '{"n": 20, "list": [1, 2]}\n'
    assert cli.main(["runs", "get-event", run.run_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"stage": "done", "value": {"n": 20, "list": [1, 2]}}
    assert cli.main(["runs", "get-event", run.run_id, "nope"]) == 1
    assert "EventNotSet" in capsys.readouterr().err
    assert cli.main(["runs", "stream", run.run_id, "--offset", "1", "--follow"]) == 0
    assert capsys.readouterr().out == ('     1  {"done": 1}\n     2  {"done": 2}\n'
                                       "next offset 3; the run has ended (stream closed)\n")
    assert cli.main(["runs", "stream", run.run_id, "--json"]) == 0
    assert capsys.readouterr().out.splitlines() == ['{"done": 0}', '{"done": 1}', '{"done": 2}']


def test_a_rerun_keeps_the_events_and_stream_of_the_ops_it_copies(env: WorkflowEnv) -> None:
    env.fail_step(flows.work, times=1, error=FatalError("no"))
    run = env.start(flows.then_work, 5)
    with pytest.raises(RunFailed):
        run.result()
    assert read_stream(run.run_id).entries == ["a", "b"] and run.event_values() == {"stage": "before"}
    fork = run.rerun()
    assert env.run_until_complete(fork) == 50
    assert fork.event_values() == {"stage": "after"}
    page = read_stream(fork.run_id)
    assert (page.entries, page.next_offset) == (["a", "b", "c"], 3)


def test_an_async_workflow_sets_events_and_writes_its_stream(env: WorkflowEnv) -> None:
    run = env.start(flows.in_async, 1)
    assert run.result() == 2
    assert run.event_values() == {"stage": "done"} and read_stream(run.run_id).entries == [2]
