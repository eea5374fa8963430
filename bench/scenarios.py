"""The benchmark's sizes, and one measurement window per (scenario, system, repeat).

Every window starts by zeroing the counting front and ends after a short settle
(so the last acknowledgements land), then keeps only the requests on the
system's own tables and queues: workers, beat and the client included. Which
scenarios run, in which order, is :mod:`bench.session`'s.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from . import proxy
from .stack import Cluster, Front, client_cpu_seconds
from .systems import Timing

SETTLE_SECONDS = 0.5
WARMUP_RUNS = 10


@dataclass(frozen=True)
class Plan:
    """Sizes of one benchmark run."""

    seq_steps: int = 10
    seq_runs: int = 50
    peer_seq_runs: int = 3  # 13-30 s a run here: 50 runs alone would take 10-25 minutes
    peer_inline_runs: int = 3
    widths: tuple[int, ...] = (100, 1000)
    burst: int = 500
    repeats: int = 3  # of each latency scenario, the systems taking turns
    history: tuple[int, ...] = (100, 10_000)  # one run each, dispatched (in place) and inline
    sent_history: tuple[int, ...] = (100, 1000)  # one run each with every step sent as a message
    history_timeout: float = 900.0  # a longer run is given up, and its steps done and rate reported
    wide: int | None = 10_000  # one fan-out of this width per system (None: none)
    wide_timeout: float = 600.0  # each side; the chord of 10,000 may not finish: reported as such
    prefork: tuple[int, ...] = (1, 2, 4)  # pool processes of the prefork runs (sequential and throughput)
    prefork_seq_runs: int = 20  # smaller than the threads pool's: three process counts, each repeated
    prefork_burst: int = 200
    peer_fan_timeout: float = 45.0
    timeout: float = 300.0
    fresh: bool = True  # empty the system's growing tables before each measurement (moto's Queries scan them)


FULL = Plan()
QUICK = Plan(seq_runs=5, peer_seq_runs=1, peer_inline_runs=2, widths=(50, 150), burst=50, repeats=2,
             history=(100, 1000), sent_history=(10, 150), history_timeout=300.0, wide=None, prefork=(2,),
             prefork_seq_runs=5, prefork_burst=50,
             peer_fan_timeout=20.0, timeout=120.0)


@dataclass
class Result:
    """One (scenario, system, repeat) measurement: timings, the requests counted, or why there is no figure.

    ``pool`` and ``processes``: the workers' Celery pool (``threads``: ``processes``
    worker processes of the bench's ``--concurrency`` threads; ``prefork``: one worker
    of ``processes`` pool processes). ``other_requests``: requests of the other
    systems in this window (their processes are paused: it shows they stayed idle).
    ``hot_keys``: the window's hottest partition keys, where the counting front reports them.
    ``column``: ``moto`` (the emulator as it is) or ``aws`` (the front adding AWS's latency per
    operation, :mod:`bench.aws_latency`). ``table_items``: items in the system's tables when the
    window ended (with ``Plan.fresh``, only the window's own: its tables were emptied before it).
    """

    scenario: str
    system: str
    steps_per_run: int
    runs: int
    timing: Timing = field(default_factory=Timing)
    counts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    cpu: dict[str, float] = field(default_factory=dict)
    repeat: int = 0
    pool: str = "threads"
    processes: int = 1
    other_requests: int = 0
    hot_keys: list[dict[str, Any]] | None = None
    column: str = "moto"
    table_items: int = 0

    @property
    def steps(self) -> int:
        """Steps of the runs that completed (of a run given up: the steps it had done)."""
        if not self.timing.latencies and self.timing.steps_done is not None:
            return self.timing.steps_done
        return self.steps_per_run * len(self.timing.latencies)

    @property
    def variant(self) -> tuple[str, str, int]:
        """What a repeat repeats: the scenario on one system with one worker setup."""
        return self.system, self.pool, self.processes

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "steps": self.steps}


SYSTEM_PREFIXES = ("wfb", "celb", "pwb")


def cpu_now(front: Front, cluster: Cluster) -> dict[str, float]:
    """CPU seconds so far of the AWS front, the system's workers (with their pool children), its beat,
    and the client."""
    workers = sum(p.cpu() for p in cluster.procs if "beat" not in p.name)
    beat = sum(p.cpu() for p in cluster.procs if "beat" in p.name)
    return {"aws": front.proc.cpu(), "workers": workers, "beat": beat, "client": client_cpu_seconds()}


def measure(front: Front, cluster: Cluster, prefix: str, result: Result, action: Callable[[], Timing]) -> Result:
    """Run ``action`` in a fresh counting window; keep ``prefix``'s requests (and the CPU each side used)."""
    proxy.reset_counts(front.url)
    before = cpu_now(front, cluster)
    try:
        result.timing = action()
    except Exception as exc:  # the table shows the failure instead of a figure
        result.error = f"{type(exc).__name__}: {exc}"
    after = cpu_now(front, cluster)
    result.cpu = {side: round(after[side] - before[side], 2) for side in after}
    time.sleep(SETTLE_SECONDS)
    rows = proxy.fetch_counts(front.url)
    result.table_items = sum(n for name, n in proxy.table_items(front.url).items() if name.startswith(f"{prefix}-"))
    result.counts = [row for row in rows if row["system"] == prefix]
    result.other_requests = sum(int(row["requests"]) for row in rows
                                if row["system"] in SYSTEM_PREFIXES and row["system"] != prefix)
    if result.error is None and result.timing.errors:
        result.error = f"{len(result.timing.errors)}/{result.runs} runs failed; first: {result.timing.errors[0]}"
    return result
