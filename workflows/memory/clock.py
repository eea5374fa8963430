"""A clock that moves only when told to."""

from __future__ import annotations


class ManualClock:
    """Epoch seconds that tests and the simulator advance explicitly."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.time = float(start)

    def now(self) -> float:
        """The current simulated time."""
        return self.time

    def advance(self, seconds: float) -> float:
        """Move time forward (never back); return the new time."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self.time += seconds
        return self.time

    def __call__(self) -> float:
        return self.time
