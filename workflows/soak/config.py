"""The soak's options: what runs, for how long, and how often things fail."""

from __future__ import annotations

from dataclasses import dataclass, field

#: The fault kinds the front injects, in the order a request's draw is matched against them.
FAULT_KINDS = ("lose", "throttle", "error", "reset", "latency")
DEFAULT_RATES = {"lose": 0.01, "throttle": 0.02, "error": 0.01, "reset": 0.01, "latency": 0.004}
#: Process roles the chaos kills (the hook endpoint, ``web``, is skewed but never killed).
KILLED_ROLES = ("worker-threads", "worker-prefork", "beat")


@dataclass(frozen=True)
class SoakConfig:
    """What one soak does.

    Attributes:
        seed: the seed of every random choice the soak makes (workload, faults, kills, skews).
        duration: seconds from the start to the check (set-up, load and drain).
        threads_workers: ``workflows worker --pool threads`` processes (the second runs every step
            as a message, ``WORKFLOWS_IN_PLACE_SECONDS=0``).
        prefork_workers: ``workflows worker --pool prefork`` processes.
        rates: the share of AWS requests that meets each fault kind (:data:`FAULT_KINDS`).
        kill_every: mean seconds between two kills (the first kills take each role once).
        wave_every: seconds between two waves of runs.
        fan_out: the width of the soak's wide fan-out.
        max_skew: the largest clock skew of a skewed process, seconds.
        lease_seconds: ``WORKFLOWS_LEASE_SECONDS`` of every process.
        keep: keep the soak's directory (logs, ledger, manifest) even when the check passes.
    """

    seed: int = 1
    duration: float = 180.0
    threads_workers: int = 2
    prefork_workers: int = 1
    rates: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RATES))
    kill_every: float = 20.0
    wave_every: float = 8.0
    fan_out: int = 100
    max_skew: float = 2.0
    lease_seconds: float = 10.0
    keep: bool = False

    @property
    def drain(self) -> float:
        """Seconds at the end of the duration when no run starts and nothing is killed."""
        return min(120.0, max(45.0, 0.25 * self.duration))


def parse_rates(text: str) -> dict[str, float]:
    """``lose=0.01,throttle=0.02,...`` -> rates; kinds not named keep their default.

    Raises:
        ValueError: an unknown kind, a rate outside 0..1, or rates adding up to more than 1.
    """
    rates = dict(DEFAULT_RATES)
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, _, value = part.partition("=")
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r} (kinds: {', '.join(FAULT_KINDS)})")
        rate = float(value)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate of {kind} must be in 0..1, got {value!r}")
        rates[kind] = rate
    if sum(rates.values()) > 1.0:
        raise ValueError(f"rates add up to more than 1: {rates}")
    return rates


def parse_workers(text: str) -> tuple[int, int]:
    """``threads=2,prefork=1`` -> (threads workers, prefork workers).

    Raises:
        ValueError: an unknown pool, a negative count, or no threads worker.
    """
    counts = {"threads": 2, "prefork": 1}
    for part in filter(None, (p.strip() for p in text.split(","))):
        pool, _, value = part.partition("=")
        if pool not in counts:
            raise ValueError(f"unknown pool {pool!r} (pools: threads, prefork)")
        counts[pool] = int(value)
        if counts[pool] < 0:
            raise ValueError(f"{pool} workers must be 0 or more")
    if counts["threads"] < 1:
        raise ValueError("the soak needs at least one threads worker")
    return counts["threads"], counts["prefork"]
