"""The benchmark's scenarios, their sizes, and one measurement window per (scenario, system).

Every window starts by zeroing the counting front and ends after a short settle
(so the last acknowledgements land), then keeps only the requests on the
system's own tables and queues: workers, beat and the client included.
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ContextManager

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
    history: tuple[int, ...] = (10, 100, 1000)
    peer_fan_timeout: float = 45.0
    timeout: float = 300.0


FULL = Plan()
QUICK = Plan(seq_runs=5, peer_seq_runs=1, peer_inline_runs=2, widths=(50, 150), burst=50, history=(10, 50, 150),
             peer_fan_timeout=20.0, timeout=120.0)


@dataclass
class Result:
    """One (scenario, system) measurement: timings, the requests counted, or why there is no figure."""

    scenario: str
    system: str
    steps_per_run: int
    runs: int
    timing: Timing = field(default_factory=Timing)
    counts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        """Steps of the runs that completed."""
        return self.steps_per_run * len(self.timing.latencies)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "steps": self.steps}


def cpu_now(front: Front, cluster: Cluster) -> dict[str, float]:
    """CPU seconds so far of the AWS front, the system's workers (and beat), and the client."""
    return {"aws": front.proc.cpu(), "workers": sum(p.cpu() for p in cluster.procs), "client": client_cpu_seconds()}


def measure(front: Front, cluster: Cluster, prefix: str, scenario: str, system: str, steps_per_run: int, runs: int,
            action: Callable[[], Timing]) -> Result:
    """Run ``action`` in a fresh counting window and keep ``prefix``'s requests (and the CPU each side used)."""
    proxy.reset_counts(front.url)
    result = Result(scenario, system, steps_per_run, runs)
    before = cpu_now(front, cluster)
    try:
        result.timing = action()
    except Exception as exc:  # the table shows the failure instead of a figure
        result.error = f"{type(exc).__name__}: {exc}"
    after = cpu_now(front, cluster)
    result.cpu = {side: round(after[side] - before[side], 2) for side in after}
    time.sleep(SETTLE_SECONDS)
    result.counts = [row for row in proxy.fetch_counts(front.url) if row["system"] == prefix]
    if result.error is None and result.timing.errors:
        result.error = f"{len(result.timing.errors)}/{runs} runs failed; first: {result.timing.errors[0]}"
    return result


def run_system(front: Front, cluster: Cluster, system: Any, plan: Plan, log: Callable[[str], None],
               wrap: Callable[[str], ContextManager[Any]] | None = None) -> list[Result]:
    """Every scenario ``system`` takes part in, in order (``wrap(scenario)``: e.g. a profiler around each)."""
    name, prefix, results = system.name, system.prefix, []
    peer = name == "pyworkflow"

    def one(scenario: str, steps: int, runs: int, action: Callable[[], Timing]) -> Result:
        log(f"  {name}: {scenario} ...")
        began = time.monotonic()
        with wrap(scenario) if wrap else contextlib.nullcontext():
            result = measure(front, cluster, prefix, scenario, name, steps, runs, action)
        log(f"  {name}: {scenario} done in {time.monotonic() - began:.1f}s"
            + (f" ({result.error})" if result.error else ""))
        results.append(result)
        return result

    n, t = plan.seq_steps, plan.timeout
    if not peer:  # latency on a fresh stack settles over its first ~20 s; the peer's runs take 10+ s each
        log(f"  {name}: warm-up ({WARMUP_RUNS} unmeasured sequential runs)")
        system.sequence(n, WARMUP_RUNS, 1, False, t)
    seq_runs = plan.peer_seq_runs if peer else plan.seq_runs
    one("sequential", n, seq_runs, lambda: system.sequence(n, seq_runs, 1, False, t))
    if name == "workflows-sent":  # only what running steps in place changes
        for size in (min(plan.history), max(plan.history)):
            one(f"history-{size}", size, 1, functools.partial(system.sequence, size, 1, 1, False, t))
        one("throughput", 1, plan.burst, lambda: system.burst(plan.burst, t))
        return results
    if name != "celery":
        inline_runs = plan.peer_inline_runs if peer else plan.seq_runs
        one("sequential-inline", n, inline_runs, lambda: system.sequence(n, inline_runs, 1, True, t))
    failed: Result | None = None
    for width in plan.widths:
        scenario = f"fan-out-{width}"
        if failed is not None:
            results.append(Result(scenario, name, width, 1, error=f"not attempted: the {failed.steps_per_run}-wide "
                                                                   f"fan-out did not finish ({failed.error})"))
            continue
        limit = plan.peer_fan_timeout if peer else t
        result = one(scenario, width, 1, functools.partial(system.fan_out, width, limit))
        if peer and result.error:
            failed = result
    if not peer:
        one("throughput", 1, plan.burst, lambda: system.burst(plan.burst, t))
    if name == "workflows":
        for size in plan.history:
            one(f"history-{size}", size, 1, functools.partial(system.sequence, size, 1, 1, False, t))
        for size in (min(plan.history), max(plan.history)):
            one(f"history-inline-{size}", size, 1, functools.partial(system.sequence, size, 1, 1, True, t))
    return results
