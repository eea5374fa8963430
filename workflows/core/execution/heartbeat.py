"""Renewals while work runs: one thread per process calls each registered renewal every
``interval`` seconds until its work ends (a run's lease while its step runs, a
concurrency slot's lease while its holder runs).

One shared thread instead of one per attempt: starting a thread costs more than a short
step. Renewals run one after another on that thread; each is a single conditional write,
due every third of a lease (100 s by default), so they do not queue behind each other.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

log = logging.getLogger("workflows.heartbeat")

Renewal = Callable[[], bool | None]


@dataclass(order=True)
class _Beat:
    due: float
    order: int
    interval: float = field(compare=False)
    renew: Renewal = field(compare=False)
    what: str = field(compare=False)
    live: bool = field(default=True, compare=False)


class Heartbeats:
    """Registered renewals, called from one daemon thread started on first use."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._beats: list[_Beat] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def every(self, interval: float, renew: Renewal, what: str) -> Iterator[None]:
        """Call ``renew`` every ``interval`` seconds while the block runs. A renewal that
        returns False is not called again (what it renews was taken); one that raises is
        logged and tried again at the next interval."""
        beat = _Beat(time.monotonic() + interval, next(self._order), interval, renew, what)
        with self._cond:
            heapq.heappush(self._beats, beat)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="workflows-heartbeat")
                self._thread.start()
            if self._beats[0] is beat:
                self._cond.notify()
        try:
            yield
        finally:
            beat.live = False  # dropped when it comes due

    def _run(self) -> None:
        while True:
            beat = self._next_due()
            try:
                if beat.renew() is False:
                    log.warning("%s was taken (its lease passed); it is no longer renewed", beat.what)
                    beat.live = False
            except Exception:  # a missed renewal only risks a duplicate attempt or a reclaimed slot
                log.warning("renewal of %s failed", beat.what, exc_info=True)
            if beat.live:
                with self._cond:
                    beat.due = time.monotonic() + beat.interval
                    heapq.heappush(self._beats, beat)

    def _next_due(self) -> _Beat:
        with self._cond:
            while True:
                while self._beats and not self._beats[0].live:
                    heapq.heappop(self._beats)
                if not self._beats:
                    self._cond.wait()
                    continue
                wait = self._beats[0].due - time.monotonic()
                if wait <= 0:
                    return heapq.heappop(self._beats)
                self._cond.wait(wait)


HEARTBEATS = Heartbeats()
