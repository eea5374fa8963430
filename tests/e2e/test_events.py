"""Events and progress on real worker processes: a client waits for an event, follows the progress
stream while the run works, answers it, and reads the stream closed once the run ended."""

from __future__ import annotations

import pytest

from tests.e2e import event_flows as flows
from tests.waiting import wait_for
from workflows import EventNotSet, get_event, read_stream, send_signal
from workflows.cli.commands import main

pytestmark = pytest.mark.e2e


def test_a_client_waits_for_events_and_follows_the_stream(cluster, capsys) -> None:  # type: ignore[no-untyped-def]
    run = flows.progress.start(4)
    assert get_event(run.run_id, "stage", timeout=60) in ("working", "waiting")
    seen: list[object] = []

    def follow() -> bool:  # read on from the last offset, as a progress bar would
        page = read_stream(run.run_id, len(seen))
        assert not page.ended and page.next_offset == len(seen) + len(page.entries)
        seen.extend(page.entries)
        return len(seen) >= 4

    wait_for(follow, 60, what="four progress entries")
    assert seen == [{"part": n, "total": sum(k * k for k in range(n + 1))} for n in range(4)]
    wait_for(lambda: run.get_event("stage", timeout=60) == "waiting", 60, what="the run to wait for its answer")
    send_signal(run.run_id, "answer", "yes")
    assert run.get_event("answer", timeout=60) == "yes"
    assert run.result(timeout=60) == 14
    assert run.event_values() == {"stage": "done", "answer": "yes"}
    page = read_stream(run.run_id, 4)
    assert (page.entries, page.next_offset, page.ended) == ([{"answer": "yes"}], 5, True)
    with pytest.raises(EventNotSet):
        run.get_event("never", timeout=5)
    capsys.readouterr()
    assert main(["runs", "stream", run.run_id, "--offset", "3", "--follow"]) == 0
    out = capsys.readouterr().out
    assert '     4  {"answer": "yes"}' in out and "stream closed" in out
    assert main(["runs", "show", run.run_id]) == 0
    assert '  answer                   "yes"' in capsys.readouterr().out
