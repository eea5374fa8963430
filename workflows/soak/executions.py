"""The ledger's check: no step body ran twice but where docs/reliability.md excuses it, every
recorded step result was produced by a body that ran, and the limits held.

A repeat is one more execution of a step call's attempt (run, key, attempt) than the first. Its
excuses, tried in this order (each names the row of docs/reliability.md it rests on):

- ``crash``: an earlier execution's worker was killed while it ran or before its outcome could
  be recorded ("Worker killed (SIGKILL) during a step", "The last step a resume runs under its
  claim, then the end").
- ``recovery``: the run records recoveries: its lease expired and the reconciler re-sent the step
  ("Killed mid-resume", "Limits worth knowing": a queue wait or a stall past the lease).
- ``duplicate message``: the two ran from one Celery task id, and the front lost the response of
  an SQS send, which the SDK then sent again ("the fault model": response lost, write retried;
  steps run at least once).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..core.records import RunRecord, with_last_outcome
from ..runtime import get_engine
from .flows import LIMIT_BURST, LIMIT_CONCURRENCY, LIMIT_RATE
from .ledger import Execution

Violation = tuple[str, str]
EXCUSES = ("crash", "recovery", "duplicate message")


@dataclass
class LedgerFindings:
    """What the ledger shows: executions, repeats by excuse, the limits seen, violations."""

    executions: int = 0
    repeats: Counter[str] = field(default_factory=Counter)
    most_at_once: int = 0
    most_in_window: str = ""
    violations: list[Violation] = field(default_factory=list)


def excuse(first: list[Execution], repeat: Execution, record: RunRecord | None, killed: dict[int, float],
           lost_sends: int, lease: float) -> str | None:
    """The excuse of one repeat given the executions before it, or None."""
    for before in first:
        kill = killed.get(before.group)
        if kill is not None and before.started <= kill <= (before.ended or kill) + 2 * lease:
            return "crash"
    if record is not None and record.recoveries > 0:
        return "recovery"
    if lost_sends and repeat.task is not None and any(b.task == repeat.task for b in first):
        return "duplicate message"
    return None


def check_repeats(executions: list[Execution], runs: dict[str, RunRecord], killed: dict[int, float],
                  lost_sends: int, lease: float, out: LedgerFindings) -> None:
    """Classify every repeated execution of a step call's attempt."""
    groups: dict[tuple[str, str, int], list[Execution]] = defaultdict(list)
    for execution in executions:
        groups[(execution.run, execution.key, execution.attempt)].append(execution)
    for (run, key, attempt), group in groups.items():
        for i in range(1, len(group)):
            reason = excuse(group[:i], group[i], runs.get(run), killed, lost_sends, lease)
            if reason is None:
                out.violations.append((run, f"step {key!r} attempt {attempt} ran {len(group)} times without excuse "
                                            f"(processes {[e.pid for e in group]}, tasks {[e.task for e in group]})"))
            else:
                out.repeats[reason] += 1


def check_recorded(executions: list[Execution], runs: dict[str, RunRecord], out: LedgerFindings) -> None:
    """Every step outcome recorded as completed was returned by an execution of that attempt."""
    returned = {(e.run, e.pos, e.attempt) for e in executions if e.outcome == "returned"}
    store = get_engine().store
    for run_id, record in runs.items():
        for event in with_last_outcome(record, store.read_history(run_id)):
            if event.kind == "step" and event.is_outcome and event.status == "completed":
                pos = event.seq // 1000
                if (run_id, pos, event.attempt) not in returned:
                    out.violations.append((run_id, f"step {event.name} at op {pos} recorded completed by attempt "
                                                   f"{event.attempt}, which no body ran"))


def check_limits(executions: list[Execution], killed: dict[int, float], skew_spread: float, lease: float,
                 out: LedgerFindings, now: float) -> None:
    """At most ``LIMIT_CONCURRENCY`` limited bodies at once, and no more starts than the rate allows."""
    limited = [e for e in executions if e.key.startswith("limited-")]
    edges: list[tuple[float, int, Execution]] = []
    for e in limited:
        end = e.ended if e.ended is not None else min(killed.get(e.group, now), now)
        edges += [(e.started, 1, e), (end, -1, e)]
    running: set[str] = set()
    by_id = {e.exec_id: e for e in limited}
    for _at, step, e in sorted(edges, key=lambda x: (x[0], x[1])):
        if step < 0:
            running.discard(e.exec_id)
            continue
        running.add(e.exec_id)
        out.most_at_once = max(out.most_at_once, len(running))
        if len(running) > LIMIT_CONCURRENCY:
            bodies = [by_id[x] for x in running]
            if not any((b.ended or now) - b.started > lease for b in bodies):
                out.violations.append((e.run, f"{len(running)} bodies of soak_limited at once (limit "
                                              f"{LIMIT_CONCURRENCY}): {sorted(b.key for b in bodies)}"))
    starts = sorted(e.started for e in limited)
    worst = 0.0
    for i in range(len(starts)):
        for j in range(i + 1, len(starts)):
            allowed = LIMIT_BURST + LIMIT_RATE * (starts[j] - starts[i] + skew_spread)
            worst = max(worst, (j - i + 1) / allowed)
            if j - i + 1 > allowed + 1e-9:
                out.violations.append(("", f"{j - i + 1} starts of soak_limited in {starts[j] - starts[i]:.2f} s "
                                           f"(rate {LIMIT_RATE:g}/s, burst {LIMIT_BURST}, "
                                           f"clock spread {skew_spread:g} s)"))
                out.most_in_window = f"{worst:.2f} of the allowance"
                return
    out.most_in_window = f"{worst:.2f} of the allowance"


def check_delayed(executions: list[Execution], starts: dict[str, float], tolerance: float,
                  out: LedgerFindings) -> None:
    """No step of a delayed run ran before its start time (less the clocks' spread and a sweep)."""
    first: dict[str, float] = {}
    for e in executions:
        if e.run in starts:
            first[e.run] = min(first.get(e.run, e.started), e.started)
    for run_id, at in first.items():
        if at < starts[run_id] - tolerance:
            out.violations.append((run_id, f"a delayed run's first step ran {starts[run_id] - at:.2f} s before its "
                                           f"start time (tolerance {tolerance:g} s)"))
