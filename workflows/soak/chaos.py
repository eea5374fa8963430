"""The chaos: kills a worker or beat by its process id at random moments and restarts it.

The first kills take each role once, in an order the seed shuffles, each at most the configured
mean after the one before, so every soak long enough kills every role; later ones pick a role at
random, with exponential waits of that mean; a killed process stays down 1-4 s. Processes that
exit by themselves are started again too, and reported: nothing but the kills may stop one.
"""

from __future__ import annotations

import random
import threading
import time

from .config import KILLED_ROLES
from .fleet import Fleet, Member


class Chaos(threading.Thread):
    """Kills and restarts the fleet's workers and beat until :meth:`stop`."""

    def __init__(self, fleet: Fleet, seed: int, kill_every: float) -> None:
        super().__init__(name="soak-chaos", daemon=True)
        self.fleet = fleet
        self.random = random.Random(f"chaos-{seed}")
        self.kill_every = kill_every
        self.halt = threading.Event()
        roles = [role for role in KILLED_ROLES if self._of(role)]
        self.random.shuffle(roles)
        self.first = roles

    def _of(self, role: str) -> list[Member]:
        return [m for m in self.fleet.members.values() if m.role == role]

    def next_role(self) -> str:
        """The role of the next kill: each once first, then at random."""
        return self.first.pop(0) if self.first else self.random.choice(KILLED_ROLES)

    def run(self) -> None:
        """Kill, wait, restart, until stopped."""
        wait = self.random.uniform(2.0, self.kill_every)
        while not self._pause(wait):
            candidates = self._of(self.next_role())
            if candidates:
                member = self.random.choice(candidates)
                self.fleet.kill(member)
                self._pause(self.random.uniform(1.0, 4.0), reap=False)
                self.fleet.start(member)
            # the first round (each role once) waits at most the mean; later waits are exponential
            wait = self.random.uniform(1.0, self.kill_every) if self.first else self.random.expovariate(
                1.0 / self.kill_every)

    def _pause(self, seconds: float, reap: bool = True) -> bool:
        """Sleep ``seconds`` (starting again any process that exited by itself); True once stopped."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.halt.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
                return True
            if reap:
                self.fleet.reap()
        return self.halt.is_set()

    def stop(self) -> None:
        """Stop killing; a process down at that moment is started again before this returns."""
        self.halt.set()
        self.join()
        self.fleet.reap()
