"""A fleet outage: in some seeds every worker stops taking messages for a long while (a deploy gone
wrong, a paused pool) while beats go on sweeping. Runs wait in their queues far longer than a
lease, so beat recovers them again and again; none may fail for it (invariant 16: a recovery
counts only when a worker took the previous one), and all must go on once the workers return."""

from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .world import World

#: One seed in this many has an outage.
EVERY = 8
#: Its length, in leases: past the simulator's ``max_recovery_attempts`` (20), so counting every
#: expiry would fail the runs that wait.
LEASES = (25.0, 45.0)


@dataclasses.dataclass
class Outage:
    """Every worker is away from ``at`` for ``length`` simulated seconds (running tasks finish)."""

    at: float
    length: float
    begun: bool = False

    def apply(self, world: World) -> None:
        """Stop the workers once the outage is due (once)."""
        if self.begun or world.time < self.at:
            return
        self.begun = True
        until = world.time + self.length
        world.trace.append(f"t={world.time - self.at:.1f} outage of every worker for {self.length:.0f}s")
        for process in world.processes:
            if process.kind == "worker":
                process.down_until = max(process.down_until, until)

    def moments(self) -> list[float]:
        """When the outage begins, while it is still to come."""
        return [] if self.begun else [self.at]


def plan(seed: int, start: float, lease: float) -> Outage | None:
    """The outage of a seed, if it has one (drawn apart from the scenario, which stays as it was)."""
    if seed % EVERY != EVERY - 2:
        return None
    rng = random.Random(seed ^ 0x0F1EE7)
    return Outage(start + rng.uniform(20.0, 600.0), lease * rng.uniform(*LEASES))
