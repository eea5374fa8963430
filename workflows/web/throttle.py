"""Failed dashboard sign-ins, counted per client address and overall in this process.

Past ``limit`` failures within ``window`` seconds an address is refused (429, with the seconds
until its oldest failure leaves the window) without its token being checked; past ``overall``
failures within the window from all addresses together, every address is (a guesser with many
addresses gets ``overall`` guesses a minute, not ``limit`` per address). The count is kept
in this process's memory: each web process counts on its own, so N processes let an address try
N times the limit, and a restart forgets. Behind a proxy the client address is the proxy's unless
its address is named in ``WORKFLOWS_WEB_TRUSTED_PROXIES`` (``workflows web`` believes no forwarding
header from anyone else).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

#: Failed sign-ins an address may make in :data:`WINDOW_SECONDS` before it is refused.
FAILURE_LIMIT = 10
WINDOW_SECONDS = 60.0
#: Failed sign-ins from all addresses together in :data:`WINDOW_SECONDS` before every address is refused.
OVERALL_LIMIT = 100
#: Addresses remembered at most (the oldest is forgotten first), so a flood of addresses cannot grow memory.
MAX_CLIENTS = 10_000


class SignInThrottle:
    """Counts failed sign-ins per client address and says how long a refused address must wait."""

    def __init__(self, limit: int = FAILURE_LIMIT, window: float = WINDOW_SECONDS,
                 clock: Callable[[], float] = time.monotonic, max_clients: int = MAX_CLIENTS,
                 overall: int = OVERALL_LIMIT) -> None:
        self.limit, self.window, self.clock, self.max_clients = limit, window, clock, max_clients
        self.overall = overall
        self._failures: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again; None if it may try now."""
        with self._lock:
            waits = []
            recent = self._recent(client)
            if recent is not None and len(recent) >= self.limit:
                waits.append(recent[0])
            self._forget(self._all)
            if len(self._all) >= self.overall:
                waits.append(self._all[0])
            if not waits:
                return None
            return max(1.0, max(waits) + self.window - self.clock())

    def failed(self, client: str) -> None:
        """Count one failed sign-in of ``client``."""
        with self._lock:
            recent = self._recent(client)
            if recent is None:
                while len(self._failures) >= self.max_clients:
                    self._failures.pop(next(iter(self._failures)))
                recent = self._failures[client] = deque()
            recent.append(self.clock())
            while len(recent) > self.limit:
                recent.popleft()
            self._all.append(self.clock())
            while len(self._all) > self.overall:
                self._all.popleft()

    def _recent(self, client: str) -> deque[float] | None:
        recent = self._failures.get(client)
        if recent is None:
            return None
        self._forget(recent)
        if not recent:
            del self._failures[client]
            return None
        return recent

    def _forget(self, recent: deque[float]) -> None:
        """Drop the failures of ``recent`` that left the window."""
        horizon = self.clock() - self.window
        while recent and recent[0] <= horizon:
            recent.popleft()
