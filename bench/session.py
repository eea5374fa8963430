"""One benchmark session: every system's processes, whose turn it is, and the order of the scenarios.

Each system's workers are started once per phase, warmed up and paused (SIGSTOP).
A turn pauses the system that ran last and resumes the next one, so exactly one
system runs at a time and a paused one sends nothing (no long polls, no beat
sweeps: each window counts the other systems' requests to show it). Pausing costs
nothing, where restarting a system costs its start and warm-up at every turn.

Phases: the threads pool's latency scenarios, repeated in alternating order; the
prefork pool with 1, 2 and 4 processes (sequential and throughput, repeated
likewise) while the threads-pool systems stay paused; back on those, the long
histories and the wide fan-out, once each; then pyworkflow-engine (once: its runs
take seconds each).
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from .repeats import alternation
from .scenarios import WARMUP_RUNS, Plan, Result, measure
from .stack import Cluster, Front
from .systems import SENT, Timing

WIDE = "wide-fan-out-"  # the wide fan-out's scenario name prefix (measured once, not repeated)
TURN_WARMUP_RUNS = 2  # unmeasured runs after a resume: its first requests open connections again
Log = Callable[[str], None]


@dataclass
class Entrant:
    """A started system: its adapter, processes, worker setup and optional per-scenario wrapper."""

    system: Any
    cluster: Cluster
    pool: str
    processes: int
    wrap: Callable[[str], ContextManager[Any]] | None = None


@dataclass(frozen=True)
class Turn:
    """One measurement: a scenario on one system."""

    scenario: str
    system: str
    steps: int
    runs: int
    action: Callable[[Any], Timing]


class Session:
    """The systems of one phase and the measurements taken on them."""

    def __init__(self, front: Front, plan: Plan, logdir: Path, log: Log, sweep: float, poll: int,
                 keep_idle: bool = False, results: list[Result] | None = None,
                 columns: dict[str, dict[str, float]] | None = None) -> None:
        self.front, self.plan, self.logdir, self.log, self.sweep, self.poll = front, plan, logdir, log, sweep, poll
        # the columns each repeated scenario is measured in: name -> the front's added latency (ms per operation)
        self.columns = columns if columns is not None else {"moto": {}}
        self.keep_idle = keep_idle  # leave other systems running idle (systems sharing queues are still paused)
        self.entrants: dict[str, Entrant] = {}
        self.active: str | None = None  # the system measured last
        self.running: set[str] = set()  # systems whose processes are not paused
        self.results: list[Result] = [] if results is None else results  # appended to as measured
        self._stack = contextlib.ExitStack()  # per-system wrappers (a profiler), closed at the end

    def start(self, system: Any, pool: str, processes: int,
              wrap: Callable[[Cluster], ContextManager[Any]] | None = None) -> bool:
        """Start ``system``'s processes (the others paused) and warm it up; it runs until another system's
        turn. False, and a result saying why, if it did not start."""
        self.pause_others(system.name, system.prefix)
        logdir = self.logdir / f"{system.name}-{pool}-{processes}"
        logdir.mkdir(parents=True, exist_ok=True)
        cluster = Cluster(logdir)
        self.log(f"{system.label} ({pool}, {processes} process(es)): starting workers")
        try:
            system.start(self.front, cluster, self.sweep, self.poll)
            if system.name != "pyworkflow":  # latency on a fresh stack settles over its first ~20 s
                system.sequence(self.plan.seq_steps, WARMUP_RUNS, 1, False, self.plan.timeout)
        except Exception as exc:
            self.log(f"{system.label} did not start: {exc}")
            self.results.append(Result("start", system.name, 0, 0, error=f"did not start: {exc}", pool=pool,
                                       processes=processes))
            cluster.stop()
            return False
        entrant = Entrant(system, cluster, pool, processes)
        if wrap is not None:
            entrant.wrap = self._stack.enter_context(wrap(cluster))
        self.entrants[system.name] = entrant
        self.active = system.name
        self.running.add(system.name)
        return True

    def pause_others(self, name: str, prefix: str) -> None:
        """Pause every running system but ``name`` (with ``keep_idle``: only those on ``prefix``'s queues).
        Before a system on the same queues runs, a long poll a paused one had sent must have returned
        empty: a paused worker must not receive the next one's message."""
        same_queues = False
        for other in sorted(self.running - {name}):
            entrant = self.entrants[other]
            if entrant.system.prefix == prefix or not self.keep_idle:
                entrant.cluster.pause()
                self.running.discard(other)
                same_queues |= entrant.system.prefix == prefix
        if same_queues:
            time.sleep(self.poll + 0.5)

    def pause_all(self) -> None:
        """Pause every system (another session's systems run next, maybe on the same queues)."""
        for name in sorted(self.running):
            self.entrants[name].cluster.pause()
        if self.running:
            self.running.clear()
            self.active = None
            time.sleep(self.poll + 0.5)

    def turn(self, name: str) -> Entrant:
        """Make ``name`` the running system (the only one, unless ``keep_idle``)."""
        entrant = self.entrants[name]
        if self.active != name:
            self.pause_others(name, entrant.system.prefix)
            entrant.cluster.resume()
            self.running.add(name)
            self.active = name
            if entrant.system.name != "pyworkflow":
                entrant.system.sequence(self.plan.seq_steps, TURN_WARMUP_RUNS, 1, False, self.plan.timeout)
        return entrant

    def run(self, turn: Turn, repeat: int = 0, column: str = "moto") -> Result:
        """Measure one turn in one column (the front's added latency set for it, the system's growing
        tables emptied first unless the plan says otherwise)."""
        entrant = self.turn(turn.system)
        system = entrant.system
        self.front.set_latency(self.columns.get(column, {}))
        if self.plan.fresh:
            self.front.clear(system.prefix, system.fresh_tables)
        label = f"{system.name} ({entrant.pool}, {entrant.processes}, {column}): {turn.scenario} #{repeat + 1}"
        self.log(f"  {label} ...")
        began = time.monotonic()
        result = Result(turn.scenario, system.name, turn.steps, turn.runs, repeat=repeat, pool=entrant.pool,
                        processes=entrant.processes, column=column)
        window = f"{turn.scenario}-{entrant.pool}{entrant.processes}-{column}"  # a profile's file name
        with entrant.wrap(window) if entrant.wrap else contextlib.nullcontext():
            measure(self.front, entrant.cluster, system.prefix, result, functools.partial(turn.action, system))
        self.log(f"  {label} done in {time.monotonic() - began:.1f}s" + (f" ({result.error})" if result.error else ""))
        entrant.cluster.check()
        self.results.append(result)
        return result

    def rounds(self, turns: list[Turn], repeats: int, columns: tuple[str, ...] | None = None) -> None:
        """Every turn of systems that started, ``repeats`` times, in alternating order, each turn in
        every column (default: the session's) one after the other: a system's two columns are
        measured back to back, the systems alternate within each repeat."""
        present = [t for t in turns if t.system in self.entrants]
        for repeat, turn in alternation(present, repeats):
            for column in columns or tuple(self.columns):
                self.run(turn, repeat, column)

    def stop_all(self) -> None:
        """Stop every system's processes (paused ones are resumed first)."""
        self._stack.close()
        for entrant in self.entrants.values():
            entrant.cluster.stop()
        self.entrants.clear()
        self.running.clear()
        self.active = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()


def sequence(steps: int, runs: int, inline: bool, timeout: float) -> Callable[[Any], Timing]:
    return lambda system: system.sequence(steps, runs, 1, inline, timeout)


def fan_out(width: int, timeout: float) -> Callable[[Any], Timing]:
    return lambda system: system.fan_out(width, timeout)


def burst(runs: int, timeout: float) -> Callable[[Any], Timing]:
    return lambda system: system.burst(runs, timeout)


def history(steps: int, inline: bool, timeout: float) -> Callable[[Any], Timing]:
    return lambda system: system.history(steps, inline, timeout)


def latency_rounds(plan: Plan, prefork: bool = False) -> Iterator[list[Turn]]:
    """The repeated scenarios, as rounds of turns (one round per scenario; sequential with its inline
    runs, which are compared with the chain of the same repeat)."""
    n, t = plan.seq_steps, plan.timeout
    runs, size = (plan.prefork_seq_runs, plan.prefork_burst) if prefork else (plan.seq_runs, plan.burst)
    seq = [Turn("sequential", "workflows", n, runs, sequence(n, runs, False, t))]
    if not prefork:
        seq += [Turn("sequential-inline", "workflows", n, runs, sequence(n, runs, True, t)),
                Turn("sequential", SENT, n, runs, sequence(n, runs, False, t))]
    yield seq + [Turn("sequential", "celery", n, runs, sequence(n, runs, False, t))]
    if not prefork:
        for width in plan.widths:
            yield [Turn(f"fan-out-{width}", system, width, 1, fan_out(width, t)) for system in ("workflows", "celery")]
    systems = ("workflows", "celery") if prefork else ("workflows", SENT, "celery")
    yield [Turn("throughput", system, 1, size, burst(size, t)) for system in systems]


def once_turns(plan: Plan) -> list[Turn]:
    """The scenarios measured once: long histories, and the wide fan-out."""
    t = plan.history_timeout
    turns = [Turn(f"history{'-inline' if inline else ''}-{size}", "workflows", size, 1, history(size, inline, t))
             for inline in (False, True) for size in plan.history]
    turns += [Turn(f"history-{size}", SENT, size, 1, history(size, False, t)) for size in plan.sent_history]
    if plan.wide:
        turns += [Turn(f"{WIDE}{plan.wide}", system, plan.wide, 1, fan_out(plan.wide, plan.wide_timeout))
                  for system in ("workflows", "celery")]
    return turns


PEER_SCENARIOS = ("sequential", "sequential-inline")


def peer_turns(plan: Plan) -> list[Turn]:
    """pyworkflow-engine's scenarios (once each)."""
    n, t = plan.seq_steps, plan.timeout
    return [Turn("sequential", "pyworkflow", n, plan.peer_seq_runs, sequence(n, plan.peer_seq_runs, False, t)),
            Turn("sequential-inline", "pyworkflow", n, plan.peer_inline_runs,
                 sequence(n, plan.peer_inline_runs, True, t)),
            *(Turn(f"fan-out-{w}", "pyworkflow", w, 1, fan_out(w, plan.peer_fan_timeout)) for w in plan.widths)]


def run_peer(session: Session, plan: Plan) -> None:
    """pyworkflow-engine's turns; past a fan-out that did not finish, wider ones are not attempted."""
    failed: Result | None = None
    for turn in peer_turns(plan):
        if failed is not None and turn.scenario.startswith("fan-out-"):
            session.results.append(Result(turn.scenario, "pyworkflow", turn.steps, 1, error=(
                f"not attempted: the {failed.steps_per_run}-wide fan-out did not finish ({failed.error})")))
            continue
        result = session.run(turn)
        if turn.scenario.startswith("fan-out-") and result.error:
            failed = result
