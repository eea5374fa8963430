"""The ledger's check: no step body ran twice but where docs/reliability.md excuses it, every
recorded step result was produced by a body that ran, and the limits held.

A repeat is one more execution of a step call's attempt (run, key, attempt) than the first. Its
excuses, tried in this order (each names the row of docs/reliability.md it rests on):

- ``crash``: an earlier execution's worker was killed while it ran or before its outcome could
  be recorded ("Worker killed (SIGKILL) during a step", "The last step a resume runs under its
  claim, then the end").
- ``recovery``: the run records recoveries: its lease expired and the reconciler re-sent the step
  ("Killed mid-resume", "Limits worth knowing": a queue wait or a stall past the lease).
- ``duplicate message``: the two ran from one Celery task id whose send the front lost the
  response of (the SDK sent it again: two messages), and the repeat started before the first
  copy's task had finished, its outcome not yet recorded ("the fault model": response lost,
  write retried; a duplicate message never runs a recorded step). A repeat that started after
  the first copy's task succeeded is a violation.
"""

from __future__ import annotations

import concurrent.futures
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..core.model.records import RunRecord, with_last_outcome
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


@dataclass(frozen=True)
class Evidence:
    """What the repeats are judged against: kills, recoveries, lost sends and task ends."""

    runs: dict[str, RunRecord]
    killed: dict[int, float]  # worker process group -> when it was killed
    lost_sends: set[str]  # task ids of SQS sends whose response the front lost
    task_ends: dict[str, list[float]]  # task id -> when a worker logged it succeeded
    lease: float


def judge(first: list[Execution], repeat: Execution, evidence: Evidence) -> tuple[str | None, str]:
    """The excuse of one repeat given the executions before it (None and why, when it has none)."""
    for before in first:
        kill = evidence.killed.get(before.group)
        if kill is not None and before.started <= kill <= (before.ended or kill) + 2 * evidence.lease:
            return "crash", ""
    record = evidence.runs.get(repeat.run)
    if record is not None and record.recoveries > 0:
        return "recovery", ""
    copies = [b for b in first if repeat.task is not None and b.task == repeat.task]
    if not copies:
        return None, "no kill, no recovery, no copy of one message"
    if repeat.task not in evidence.lost_sends:
        return None, f"a second delivery of task {repeat.task} whose send was not lost"
    done = [t for t in evidence.task_ends.get(repeat.task or "", []) if t < repeat.started - 0.05]
    if done:
        return None, (f"a second copy of task {repeat.task} (its send retried after a lost response) ran the body "
                      f"{repeat.started - min(done):.2f} s after the first copy's task had succeeded, its outcome "
                      "recorded: a copy is taken for a first delivery, which skips the recorded check")
    return "duplicate message", ""


def check_repeats(executions: list[Execution], evidence: Evidence, out: LedgerFindings) -> None:
    """Classify every repeated execution of a step call's attempt."""
    groups: dict[tuple[str, str, int], list[Execution]] = defaultdict(list)
    for execution in executions:
        groups[(execution.run, execution.key, execution.attempt)].append(execution)
    for (run, key, attempt), group in groups.items():
        for i in range(1, len(group)):
            reason, why = judge(group[:i], group[i], evidence)
            if reason is None:
                out.violations.append((run, f"step {key!r} attempt {attempt} ran {len(group)} times: {why} "
                                            f"(processes {[e.pid for e in group]})"))
            else:
                out.repeats[reason] += 1


def check_recorded(executions: list[Execution], runs: dict[str, RunRecord], out: LedgerFindings) -> None:
    """Every step outcome recorded as completed was returned by an execution of that attempt."""
    returned = {(e.run, e.pos, e.attempt) for e in executions if e.outcome == "returned"}
    store = get_engine().store
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:  # moto answers one, we parse another
        histories = dict(zip(runs, pool.map(store.read_history, runs), strict=True))
    for run_id, record in runs.items():
        for event in with_last_outcome(record, histories[run_id]):
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
