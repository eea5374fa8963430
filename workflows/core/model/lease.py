"""When a resume renews the lease of its run (at op boundaries; a running step has its heartbeat)."""

from __future__ import annotations


class LeaseSchedule:
    """The time at which the lease a resume holds must next be renewed.

    A lease counts as set ``lease_seconds`` before it expires and is renewed once a
    third of that has passed. A shorter one (a wake-up's) is renewed halfway to its
    expiry instead, so a quick resume of a woken run writes nothing more.
    """

    def __init__(self, lease_seconds: float, expires_at: float | None, now: float) -> None:
        self.lease_seconds = lease_seconds
        if expires_at is None:
            self.due = now + lease_seconds / 3
        elif expires_at - now >= lease_seconds * 2 / 3:
            self.due = expires_at - lease_seconds * 2 / 3
        else:
            self.due = now + (expires_at - now) / 2

    def renewed(self, now: float) -> float:
        """Note a renewal at ``now``; return a lower bound of the new expiry."""
        self.due = now + self.lease_seconds / 3
        return now + self.lease_seconds
