"""Which fault, if any, a port call meets: drawn from the scenario's seeded generator."""

from __future__ import annotations

import dataclasses
import random


@dataclasses.dataclass(frozen=True)
class FaultPlan:
    """Probabilities per port call (store request or message send) while faults are on.

    ``crash_before`` / ``crash_after``: the calling process dies before the call, or after
    it took effect. ``lost``: a write applies, its response is lost and the SDK retries it
    (for a send: the message is sent twice). ``throttle``: the call fails before it
    reaches the service. ``pause``: the process stalls, the clock jumps (leases may
    expire mid-step). Delivery faults: ``duplicate`` (a received message stays visible
    too) and ``delay`` (a sent message becomes visible later, so messages reorder).
    """

    crash_before: float = 0.004
    crash_after: float = 0.004
    lost: float = 0.01
    throttle: float = 0.01
    pause: float = 0.004
    duplicate: float = 0.03
    delay: float = 0.05
    skew: float = 2.0  # max clock skew of a process, seconds

    @classmethod
    def none(cls) -> FaultPlan:
        return cls(0, 0, 0, 0, 0, 0, 0, 0)

    @classmethod
    def lost_responses(cls) -> FaultPlan:
        """Only lost responses and delivery faults: no process dies or stalls, so no lease
        may ever expire except while a message waits in the queue."""
        return cls(crash_before=0, crash_after=0, lost=0.06, throttle=0, pause=0)

    @property
    def stops_processes(self) -> bool:
        """Whether a process may die, stall or fail a call (a lease may then expire)."""
        return any((self.crash_before, self.crash_after, self.throttle, self.pause))

    def draw(self, rng: random.Random) -> str | None:
        """The fault of one port call, or None."""
        roll = rng.random()
        for kind in ("crash_before", "crash_after", "lost", "throttle", "pause"):
            chance = getattr(self, kind)
            if roll < chance:
                return kind
            roll -= chance
        return None
