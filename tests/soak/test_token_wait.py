"""Found by the 1-hour chaos soak (seed 12): an approval run's hook timed out because the driver gave up.

The run handed out its hook token 3 min 13 s after it created the hook (its worker died and beat,
killed about once a minute, recovered it late), but the driver waited for the token only 120 s, so
it never resumed the hook and the check reported a violation that the engine did not make. The
driver now waits while the hook can still be resumed (its timeout less a margin for the POSTs).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from workflows.soak import flows
from workflows.soak.interact import POST_MARGIN, Entry, resume_over_http


class OneUseHook(BaseHTTPRequestHandler):
    """A hook endpoint whose token takes one resume: 202, then 409."""

    used = False

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        status = 409 if OneUseHook.used else 202
        OneUseHook.used = True
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web_url() -> Iterator[str]:
    OneUseHook.used = False
    server = ThreadingHTTPServer(("127.0.0.1", 0), OneUseHook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class SlowRun:
    """A virtual clock; the run writes its token ``after`` seconds past the entry's creation."""

    def __init__(self, tokens: Path, entry: Entry, after: float) -> None:
        self.now, self.tokens, self.entry, self.after = entry.created, tokens, entry, after

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.now >= self.entry.created + self.after:
            (self.tokens / self.entry.run_id).write_text("token")


def test_a_token_handed_out_minutes_late_is_still_used(tmp_path: Path, web_url: str) -> None:
    entry = Entry("approval", "s12-approval-249", "run-1", created=1_000.0)
    run = SlowRun(tmp_path, entry, after=193.0)  # as in seed 12's hour
    resume_over_http(entry, web_url, tmp_path, flows.APPROVAL_TIMEOUT, clock=run.clock, sleep=run.sleep)
    assert entry.notes == []
    assert entry.hook_statuses == [202, 409]


def test_the_driver_gives_up_only_when_the_hook_can_no_longer_be_resumed(tmp_path: Path, web_url: str) -> None:
    entry = Entry("approval", "s1-approval-1", "run-2", created=1_000.0)
    run = SlowRun(tmp_path, entry, after=flows.APPROVAL_TIMEOUT)
    resume_over_http(entry, web_url, tmp_path, flows.APPROVAL_TIMEOUT, clock=run.clock, sleep=run.sleep)
    assert entry.hook_statuses == []
    assert entry.notes == [f"no token was handed out in {flows.APPROVAL_TIMEOUT - POST_MARGIN:g} s"]
    assert run.now == pytest.approx(entry.created + flows.APPROVAL_TIMEOUT - POST_MARGIN, abs=0.5)
