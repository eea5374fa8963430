"""One simulated deployment: workers, beats and a client over the in-memory store and an
SQS-like broker, driven event by event by a seeded scheduler."""

from __future__ import annotations

import copy
import dataclasses
import functools
import random
from typing import Any, Callable, Iterator

from workflows.core.background.firing import ensure_listener, fire_due_schedules

from ..batches import drive_due_batches
from ..client import cancel_run, complete_hook, last_of_chain, signal_run
from ..core.background import forks
from ..core.background.sweeper import fire_due_timers, reconcile
from ..core.engine import Engine
from ..core.model.records import TERMINAL, ResumeMessage, RunStatus, StepMessage
from ..core.model.registry import get_workflow
from ..core.ops.steps import current_step, execute_step, run_worker_task
from ..core.storage.retention import keep_alive_age, sweep_retention
from ..core.storage.rules import read_fairly
from ..errors import StorageError, Throttled, WorkflowError
from ..memory import MemoryStore
from ..settings import Settings
from . import batches as batched
from . import outage, overrun, repeats, watch, workloads
from . import schedules as scheduled
from . import updates as sim_updates
from .actors import Actor, ActorLocalInPlace, Baton, Crash, Work
from .broker import Broker, Envelope
from .decay import DAY, Decay
from .faults import FaultPlan
from .invariants import (
    check_ends,
    check_exclusive,
    check_liveness,
    check_one_live_run,
    check_recovery,
    final_item,
)
from .keep import check_deleting, check_kept
from .readers import read_and_check
from .retention import check_retention

START = 1_800_000_000.0
#: So low that many of the workloads' payloads (hook payloads, some arguments and results) go to the
#: blob store as references, and its requests meet the faults like any other.
PAYLOAD_THRESHOLD = 4
SETTINGS = Settings(lease_seconds=60.0, visibility_timeout=120, max_recovery_attempts=20, in_place_seconds=10.0,
                    hook_secret="simulated-deployment-hook-secret-0123456789",
                    payload_threshold_bytes=PAYLOAD_THRESHOLD)
TASKS_PER_WORKER = 2  # concurrent tasks per worker process
BEAT_INTERVAL = 5.0  # a beat sweeps at most this often (simulated seconds; the default sweep interval)
STEP_SECONDS = 6.0  # a step body takes up to this long (simulated seconds)
JUMP = 6 * 3600.0  # an idle world moves its clock at most this far at once (long waits cost days / 6 h events)
#: A fifth of the seeds keep ended runs and their payload objects only a week (WORKFLOWS_RETENTION=7d and
#: WORKFLOWS_PAYLOAD_EXPIRY_DAYS=7), so that runs, chains and forks living longer than that meet TTL and the rule.
SHORT_EXPIRY = SETTINGS.with_(retention=7 * 86400.0, payload_expiry_days=7)
#: A fifth keep every payload inline (the default deployment's threshold): no object goes to the bucket, so
#: a run with nothing else written without a TTL ends out of the retention index (core.storage.retention.needs_sweep).
INLINE = SETTINGS.with_(payload_threshold_bytes=SETTINGS.max_payload_bytes)


class ProcessClock:
    """A process's view of the time: the world's, skewed."""

    def __init__(self, world: World, skew: float) -> None:
        self.world, self.skew = world, skew

    def now(self) -> float:
        return self.world.time + self.skew

    def __call__(self) -> float:
        return self.now()


class SimTransport:
    """The Transport port of one simulated process: sends go to the world's broker."""

    def __init__(self, world: World, process: Process) -> None:
        self.world, self.process = world, process

    def send_step(self, message: StepMessage) -> None:
        self.world.send(self.process, message)

    def send_steps(self, messages: list[StepMessage]) -> None:
        for message in messages:
            self.send_step(message)

    def send_resume(self, message: ResumeMessage) -> None:
        self.world.send(self.process, message)

    def runs_here(self, step: str, queue: str | None) -> bool:
        return self.process.kind == "worker" and self.world.runs_steps_in_place(self.process)

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        self.world.trace.append(f"dead letter: {reason} {detail}")


@dataclasses.dataclass
class Process:
    """A worker, a beat or the client: its engine is rebuilt when it restarts."""

    name: str
    kind: str
    engine: Engine = dataclasses.field(init=False)
    down_until: float = 0.0
    restarts: int = 0
    next_beat: float = 0.0


@dataclasses.dataclass
class Instance:
    """One started workflow of the scenario and what the client does with it."""

    workload: workloads.Workload
    run_id: str
    args: list[Any]
    cancel_at: float | None
    act_at: float
    started: bool = False
    acted: bool = False
    cancelled: bool = False
    cancel_sent: bool = False
    progress: int = 0  # signals of a "signals" action sent so far
    forks: list[str] = dataclasses.field(default_factory=list)  # runs the client forked from this one


@dataclasses.dataclass(frozen=True)
class Scale:
    """How big a scenario is: its runs and processes, the events faults are injected in, the events
    after which a run that has not ended is a violation."""

    runs: int = 4
    workers: int = 2
    beats: int = 2
    chaos_steps: int = 1500
    max_steps: int = 24000


DEFAULT_SCALE = Scale()


class World:
    """Runs one scenario; :attr:`violations` says what went wrong, :attr:`trace` how."""

    def __init__(self, seed: int, *, scale: Scale = DEFAULT_SCALE, faults: FaultPlan | None = None,
                 store_class: type[MemoryStore] = MemoryStore) -> None:
        self.seed, self.rng = seed, random.Random(seed)
        self.faults = faults or FaultPlan()
        self.chaos_steps, self.max_steps = scale.chaos_steps, scale.max_steps
        runs, workers, beats = scale.runs, scale.workers, scale.beats
        self.time = self.start = START
        self.baton = Baton()
        self.settings = SHORT_EXPIRY if seed % 5 == 1 else INLINE if seed % 5 == 3 else SETTINGS
        self.store = store_class(self.settings, self._now)
        self.broker = Broker(SETTINGS.visibility_timeout)
        self.trace: list[str] = []
        self.violations: list[str] = []
        self.actors: list[Actor] = []
        self.steps = 0
        self.executions: dict[tuple[Any, ...], int] = {}
        self.excuses: dict[str, int] = {}
        self.tokens: dict[str, str] = {}
        self.ended_history: dict[str, int] = {}
        self.events_seen = 0  # history records at the last liveness check
        self.liveness_checked: tuple[int | None, ...] = ()  # the state the liveness check last read
        self.overlap_checked: int | None = None  # the runs' change count the schedule's overlap check last read
        self.inside: dict[str, dict[Any, float]] = {}  # per limited step: actors in its body, since when
        self.gated_runs: set[str] = set()  # runs of the concurrency=1 workflow that ran a step
        self.last_pause = float("-inf")  # when a process last stalled (every lease may have expired)
        self.processes = ([Process(f"worker{i}", "worker") for i in range(workers)]
                          + [Process(f"beat{i}", "beat") for i in range(beats)] + [Process("client", "client")])
        for process in self.processes:
            self._boot(process)
        self.instances = [self._instance(i) for i in range(runs)]
        self.schedule = scheduled.create(self, self.rng, START) if self.rng.random() < 0.3 else None
        self.batch = batched.plan(self, seed, START)
        self.decay = Decay(self, seed)
        self.outage = outage.plan(seed, START, self.settings.lease_seconds)
        watch.install(self)

    # -- set-up ---------------------------------------------------------------------------------
    def _now(self) -> float:
        return self.time

    def true_time(self) -> float:
        """The world's time (no process's skew)."""
        return self.time

    def _boot(self, process: Process) -> None:
        skew = self.rng.uniform(-self.faults.skew, self.faults.skew) if self.faults.skew else 0.0
        clock = ProcessClock(self, skew)
        view = copy.copy(self.store)  # the same tables, this process's clock and faults
        view.clock = clock
        view.interceptor = lambda name, apply: self.port(process, name, apply)
        view._read_shards = functools.partial(self._read_shards, process, view)  # type: ignore[method-assign]
        process.engine = Engine(view, SimTransport(self, process), self._settings(process), clock=clock)
        process.engine.in_place = ActorLocalInPlace()  # type: ignore[assignment]
        ensure_listener(process.engine)  # a scheduled run's end releases its schedule (as the runtime wires it)

    def _settings(self, process: Process) -> Settings:
        """A third of the seeds play a rolling deploy: every process runs code version v2, but
        worker1 is an old worker that serves only v1 runs, so it defers every run it meets."""
        if self.seed % 3 != 2:
            return self.settings
        serves = ("v1",) if process.name == "worker1" else ("v2",)
        return self.settings.with_(code_version="v2", serve_versions=serves)

    def runs_steps_in_place(self, process: Process) -> bool:
        """Whether a worker runs a run's next step in place: a quarter of the seeds send every step
        as a message, a quarter have worker1 send them (so a step's worker writes its outcome with the
        next step's dispatch: ``core.replay.marks``). Decided by the seed alone, not by the scenario's draws."""
        if self.seed % 4 == 1:
            return False
        return not (self.seed % 4 == 3 and process.name == "worker1")

    def _instance(self, index: int) -> Instance:
        workload = self.rng.choice(workloads.CATALOGUE)
        key = f"s{self.seed}-{index}"
        cancel_at = START + self.rng.uniform(0, 300) if self.rng.random() < 0.15 else None
        return Instance(workload, f"run-{key}", workload.make_args(self.rng, key), cancel_at,
                        START + workload.act_after + self.rng.uniform(0, 400))

    # -- ports --------------------------------------------------------------------------------------
    @property
    def chaos(self) -> bool:
        return self.steps < self.chaos_steps

    def port(self, process: Process, name: str, apply: Callable[[], Any]) -> Any:
        """Every store request and message send of a process passes here: a switch point."""
        if self.baton.actor() is None:
            return apply()  # a thread the simulator does not schedule (a lease heartbeat): no faults
        self.baton.pause(name)
        actor = self.baton.actor()
        if actor is not None:
            actor.longest_gap = max(actor.longest_gap, self.time - actor.last_call)
            actor.last_call = self.time
        fault = self.faults.draw(self.rng) if self.chaos else None
        if fault is not None:
            self.trace.append(f"t={self.time - START:.1f} {process.name} {name}: {fault}")
        if fault == "crash_before":
            self.crash(process)
        if fault == "throttle":  # the task fails: a step whose outcome it was recording runs again
            run_id = actor.run_id if actor is not None else ""
            self.excuses[run_id] = self.excuses.get(run_id, 0) + 1
            raise Throttled(f"{name}: injected throttle")
        if fault == "pause":
            self.last_pause = self.time
            self.time += SETTINGS.lease_seconds * self.rng.uniform(0.5, 1.5)
        held = self._expired_claim(actor) if name == "claim run" else None
        result = apply()
        if name == "claim recovery":
            check_recovery(self, result["run_id"])
        if held is not None:
            self._taken_over(actor, held)
        if fault == "lost":
            result = apply()  # the SDK's retry of a request that already applied
        if fault == "crash_after":
            self.crash(process)
        return result

    def _expired_claim(self, actor: Actor | None) -> str | None:
        """The owner of the run's claim if another resume holds it and its lease has expired, as the
        claimer's clock says (the engine judges a lease by it: a clock ahead takes over that much
        earlier, seed 32169)."""
        item = self.store.runs.items.get((actor.run_id,)) if actor is not None else None
        owner = (item or {}).get("owner")
        expires = (item or {}).get("lease_expires_at")
        if actor is None or not owner or expires is None:
            return None
        clock = next((p.engine.now for p in self.processes if p.name == actor.process), lambda: self.time)
        return owner if expires < clock() else None

    def _taken_over(self, actor: Actor | None, held: str) -> None:
        """A claim taken from a resume whose lease expired: the step that resume was running may run
        again (excused, as a recovery is), but only if its holder had stopped or stalled."""
        item = self.store.runs.items.get((actor.run_id,)) if actor is not None else None
        if actor is None or item is None or item.get("owner") in (None, held):
            return
        self.excuses[actor.run_id] = self.excuses.get(actor.run_id, 0) + 1
        check_recovery(self, actor.run_id)

    def _read_shards(self, process: Process, view: MemoryStore, shards: int, limit: int,
                     query: Callable[[str], Iterator[Any]]) -> list[Any]:
        """A sweep's read of every shard of an index: one switch point (a write between two
        shards' reads changes nothing a sweep does, and each read would be an event)."""
        def apply() -> list[Any]:
            interceptor, view.interceptor = view.interceptor, None
            try:
                return read_fairly(shards, limit, query)
            finally:
                view.interceptor = interceptor

        return self.port(process, "query shards", apply)  # type: ignore[no-any-return]

    def send(self, process: Process, message: StepMessage | ResumeMessage) -> None:
        sends = [0]

        def apply() -> None:
            sends[0] += 1
            # a recovery re-sends each op it finds in flight (one recovery may re-send many branches)
            if isinstance(message, StepMessage) and message.resent:
                self.excuses[message.run_id] = self.excuses.get(message.run_id, 0) + 1
            delay = self.rng.uniform(0, 20) if self.chaos and self.rng.random() < self.faults.delay else 0.0
            # a lost response: the sender sends it again marked as a possible repeat, delayed (its
            # receiver reads what is recorded first; ``_task`` excuses a repeat only if nothing was)
            repeat = sends[0] > 1
            envelope = self.broker.send(message, self.time, max(delay, repeats.REPEAT_DELAY) if repeat else delay)
            envelope.repeat = repeat

        self.port(process, f"send {type(message).__name__}", apply)

    def crash(self, process: Process) -> None:
        """The process dies: its tasks stop where they are; it restarts a little later."""
        self.trace.append(f"t={self.time - START:.1f} crash {process.name}")
        process.down_until = self.time + self.rng.uniform(1, 30)
        process.restarts += 1
        for actor in self.actors:
            if actor.process == process.name and not actor.done:
                actor.kill = True
                self.excuses[actor.run_id] = self.excuses.get(actor.run_id, 0) + 1
        if process.kind == "beat":  # a claimed retry timer it had not deleted is taken again after a lease
            for timer in self.store.timers.items.values():
                if "claimed_at" in timer:
                    self.excuses[timer["run_id"]] = self.excuses.get(timer["run_id"], 0) + 1
        self._boot(process)
        raise Crash()

    # -- what workloads report -----------------------------------------------------------------
    def executed(self, label: str) -> None:
        info = current_step()
        key = (info.run_id, info.pos, info.attempt, label) if info else ("?", label)
        self.executions[key] = self.executions.get(key, 0) + 1
        actor = self.baton.actor()
        if actor is not None:  # the step's work takes time; other tasks run meanwhile (not after)
            actor.ready_at = self.time + self.rng.uniform(0.0, STEP_SECONDS)
            self.baton.pause(f"step {label}")

    def published(self, key: str, token: str) -> None:
        self.tokens[key] = token

    def entered(self, label: str) -> None:
        check_exclusive(self, label)

    def left(self, label: str) -> None:
        actor = self.baton.actor()
        if actor is not None:
            self.inside.get(label, {}).pop(actor, None)

    def day(self) -> float:
        return (self.time - START) / DAY

    def deleting(self, what: str, owner: str) -> None:
        """TTL is about to delete ``what``, an item of run ``owner``."""
        check_deleting(self, what, owner)

    def spawn_overrun(self, actor: Actor, body: Callable[[], None]) -> None:
        """A step body that outlives its attempt's timeout goes on as an actor of the same process."""
        ghost = Actor(f"{actor.name}-overrun", actor.process, body, self.baton,
                      Work(actor.run_id, started=actor.started))
        ghost.ready_at = self.time
        self.actors.append(ghost)

    def gated(self, run_id: str) -> None:
        check_one_live_run(self, run_id)

    # -- the scheduler ------------------------------------------------------------------------
    def run(self) -> World:
        """Play the scenario to its end (every run ended) or to a violation."""
        workloads.observer = self  # type: ignore[assignment]
        undo = overrun.install(self)
        try:
            while self.steps < self.max_steps and not self.violations:
                self.steps += 1
                if self.decay.step():
                    check_kept(self)
                if self.outage is not None:
                    self.outage.apply(self)
                check_liveness(self)
                if self.schedule is not None:
                    scheduled.check_overlap(self, self.schedule)
                if self.batch is not None:
                    batched.finished(self, self.batch)  # keeps the ended batch as first seen
                if self._finished():
                    break
                idle_until = self._idle_until()
                if idle_until is not None:  # nothing but empty sweeps until then: skip them
                    self.time = idle_until
                    continue
                options = self._options()
                if not options:
                    if not self._advance():
                        self.violations.append("stuck: runs are not ended and nothing will happen")
                    continue
                kinds, weights = zip(*[(o, o[0]) for o in options], strict=True)
                choice = self.rng.choices(kinds, weights=[WEIGHTS[w] for w in weights])[0]
                self._perform(choice)
            else:
                if not self.violations:
                    self.violations.append(f"no end after {self.max_steps} events")
            if not self.violations:
                check_ends(self)
                check_retention(self)
                if self.schedule is not None:
                    scheduled.check_end(self, self.schedule)
                if self.batch is not None:
                    batched.check_end(self, self.batch)
        finally:
            for actor in self.actors:
                actor.kill = True
                if not actor.done:
                    actor.step()
            workloads.observer = workloads.Observer()
            undo()
        return self

    def _finished(self) -> bool:
        if not all(i.started for i in self.instances) or any(not a.done for a in self.actors):
            return False
        if any(i.workload.needs in ("fork", "handle") and not i.acted for i in self.instances):
            return False
        ended = [r for i in self.instances for r in (i.run_id, *i.forks)]
        ours = set(ended)
        if any(item["status"] not in TERMINAL and run_id.partition(".")[0] in ours  # a child left by its parent
               for (run_id,), item in self.store.runs.items.items()):
            return False
        return all((run := final_item(self, r)) is not None and run["status"] in TERMINAL
                   for r in ended) and (self.schedule is None or scheduled.finished(self, self.schedule)) and (
            self.batch is None or batched.finished(self, self.batch))

    def _options(self) -> list[tuple[str, Any]]:
        now = self.time
        options: list[tuple[str, Any]] = [("step", a) for a in self.actors if not a.done and a.ready_at <= now]
        visible = any(e.visible_at <= now for e in self.broker.messages.values())
        running: dict[str, int] = {}  # per process, its actors not done
        for actor in self.actors:
            if not actor.done:
                running[actor.process] = running.get(actor.process, 0) + 1
        for process in self.processes:
            if process.down_until > now:
                continue
            busy = running.get(process.name, 0)
            if process.kind == "worker" and visible and busy < TASKS_PER_WORKER:
                options.append(("deliver", process))
            elif process.kind == "beat" and not busy and self.time >= process.next_beat:
                options.append(("beat", process))
            elif process.kind == "client" and not busy:
                options += [("client", i) for i in self.instances if self._client_due(i)]
                if self.batch is not None and batched.client_due(self, self.batch):
                    options.append(("batch", self.batch))
        options.append(("tick", None))
        return options

    def _perform(self, choice: tuple[str, Any]) -> None:
        kind, arg = choice
        if kind == "step":
            arg.step()
            if arg.done:
                self._finish(arg)
        elif kind == "deliver":
            envelope = self.rng.choice(self.broker.visible(self.time))
            self.broker.receive(envelope, self.time)
            if self.chaos and self.rng.random() < self.faults.duplicate:
                self.broker.send(envelope.body, self.time)  # SQS delivers a copy too
                self.excuses[envelope.run_id] = self.excuses.get(envelope.run_id, 0) + 1
            if envelope.receives > 1:
                self.excuses[envelope.run_id] = self.excuses.get(envelope.run_id, 0) + 1
            self._spawn(arg, f"task{envelope.id}", lambda: self._task(arg, envelope), envelope.run_id, envelope)
        elif kind == "beat":
            arg.next_beat = self.time + BEAT_INTERVAL
            self._spawn(arg, "beat", lambda: self._beat(arg), "", None)
        elif kind == "client":
            self._spawn(arg if isinstance(arg, Process) else self.processes[-1], f"client-{arg.run_id}",
                        lambda: self._client(arg), arg.run_id, None)
        elif kind == "batch":
            self._spawn(self.processes[-1], "client-batch", lambda: self._start_batch(arg), "", None)
        elif kind == "tick":
            self.time += self.rng.choice([0.0, 0.5, 2.0, 10.0])

    def _spawn(self, process: Process, name: str, body: Callable[[], None], run_id: str,
               envelope: Envelope | None) -> None:
        self.actors.append(Actor(name, process.name, body, self.baton, Work(run_id, envelope, self.time)))

    def _finish(self, actor: Actor) -> None:
        self.actors.remove(actor)
        envelope = actor.envelope
        if envelope is not None and not actor.crashed:
            self.broker.delete(envelope)  # acked (also when the task raised, as Celery does)
        if actor.error is not None and not isinstance(actor.error, (StorageError, ConnectionError)):
            self.violations.append(f"{actor.name} raised {type(actor.error).__name__}: {actor.error}")

    def _task(self, process: Process, envelope: Envelope) -> None:
        engine, body = process.engine, envelope.body
        if isinstance(body, ResumeMessage):
            if envelope.repeat:  # a resume's copy, as a duplicate delivery, may race the one before it
                self.excuses[body.run_id] = self.excuses.get(body.run_id, 0) + 1
            run_worker_task(engine, lambda: engine.resume(body.run_id, recovering=body.recovering))
        else:
            redelivered = body.resent or envelope.receives > 1 or envelope.repeat
            if envelope.repeat and not repeats.recorded(self.store, body):
                self.excuses[body.run_id] = self.excuses.get(body.run_id, 0) + 1  # its first copy may still run
            run_worker_task(engine, lambda: execute_step(engine, body, redelivered=redelivered))

    def _beat(self, process: Process) -> None:
        fire_due_timers(process.engine)
        reconcile(process.engine)
        sweep_retention(process.engine)
        fire_due_schedules(process.engine)
        drive_due_batches(process.engine)

    def _start_batch(self, scenario: batched.BatchScenario) -> None:
        try:
            batched.start(self, scenario, self.processes[-1].engine)
        except (StorageError, ConnectionError):
            pass  # the client retries later

    # -- the client ---------------------------------------------------------------------------
    def _client_due(self, instance: Instance) -> bool:
        if not instance.started:
            return True
        if instance.cancel_at is not None and not instance.cancelled and self.time >= instance.cancel_at:
            return True
        if instance.acted or self.time < instance.act_at or instance.workload.needs is None:
            return False
        return instance.workload.needs != "hook" or instance.args[0] in self.tokens

    def _client(self, instance: Instance) -> None:
        engine = self.processes[-1].engine
        try:
            if not instance.started:
                definition = get_workflow(instance.workload.name)
                delay = instance.workload.delay
                later: dict[str, Any] = {} if delay is None else {"start_at": engine.now() + delay(instance.args)}
                engine.create_run(definition, engine.payloads.encode([instance.args, {}], "arguments"),
                                  run_id=instance.run_id, **later)
                instance.started = True
            elif instance.cancel_at is not None and not instance.cancelled and self.time >= instance.cancel_at:
                instance.cancel_sent = True  # from here the run may end cancelled (the client may die after the write)
                cancel_run(engine, instance.run_id)
                instance.cancelled = True
            elif instance.workload.needs == "signal":
                signal_run(engine, instance.run_id, "go", "go!")
                instance.acted = True
            elif instance.workload.needs == "signals":  # one after the other; a retry sends the rest
                for payload in ("first", "second")[instance.progress:]:
                    signal_run(engine, instance.run_id, "item", payload)
                    instance.progress += 1
                instance.acted = True
            elif instance.workload.needs in ("updates", "late_update"):  # a retry sends the rest, same ids
                sim_updates.act(engine, instance)
                instance.acted = True
            elif instance.workload.needs == "events":  # reads its events and stream while it runs
                instance.acted = read_and_check(self, engine, instance)
            elif instance.workload.needs == "handle":  # a handle of the chain's first run, used weeks later
                last_of_chain(engine.store, instance.run_id)
                instance.acted = True
            elif instance.workload.needs == "fork":  # the key makes a retry find the fork it created
                fork = forks.fork_run(engine, instance.run_id, 1, idempotency_key=f"fork-{instance.run_id}")
                instance.forks = [fork]
                instance.acted = True
            else:
                complete_hook(engine, self.tokens[instance.args[0]], {"approved": instance.args[0]})
                instance.acted = True
        except (StorageError, ConnectionError):
            pass  # the client retries later
        except WorkflowError as exc:  # refused for good (the run ended, the hook expired...)
            self.trace.append(f"client {instance.run_id}: {type(exc).__name__}")
            instance.acted = True

    # -- time ---------------------------------------------------------------------------------
    def _moments(self) -> list[float]:
        """When something is due: a message visible, a process back, a timer, a lease expiry,
        a schedule, a client action (beats' own sweep times aside)."""
        moments = [self.broker.next_visible()]
        moments += [p.down_until for p in self.processes if p.down_until > self.time]
        moments += [t["due_at"] for t in self.store.timers.items.values()]
        moments += [r["lease_expires_at"] + 0.001 for r in self.store.runs.items.values()
                    if r.get("lease_expires_at") is not None and r["status"] not in TERMINAL]
        moments += [s["due_at"] for s in self.store.schedules.items.values() if s.get("active_shard") is not None]
        # a client action still to come (one already due that the client cannot take yet, a hook whose
        # token no step has published, waits for the task that publishes it: it is no moment)
        moments += [i.act_at for i in self.instances if not i.acted and i.workload.needs is not None
                    and (i.act_at > self.time or self._client_due(i))] + [
            i.cancel_at for i in self.instances if i.cancel_at is not None and not i.cancelled]
        # an ended run not yet stamped: beats run until its retention sweep stamps it
        delay = self.settings.lease_seconds + 0.001
        moments += [r["ended_at"] + delay for r in self.store.runs.items.values()
                    if "retain_shard" in r and r.get("ended_at") is not None]
        moments += [m for m in self.decay.moments() if m != float("inf")] + batched.moments(self)
        moments += self._keep_alive_moments()
        moments += [] if self.outage is None else self.outage.moments()
        if self.batch is not None and self.batch.batch_id is None:
            moments.append(self.batch.at)
        return [m for m in moments if m is not None]

    def _keep_alive_moments(self) -> list[float]:
        """When a beat's keep-alive pass renews a live run (or a live chain's first run) whose
        items were last kept alive half a horizon ago: at that age, once a beat's pass may start."""
        if self.settings.retention is None:
            return []
        beats = [p.engine.keep_alive.next_pass for p in self.processes if p.kind == "beat"]
        start, age = min(beats, default=self.time), keep_alive_age(self.settings)
        return [max(float(r.get("stamped_at") or r["created_at"]) + age, start) + 0.001
                for r in self.store.runs.items.values()
                if r["status"] not in TERMINAL or (r["status"] == RunStatus.CONTINUED and "retain_until" not in r)]

    def _idle_until(self) -> float | None:
        """The next moment something is due, if no task runs and nothing is due before it
        (a beat's sweep until then finds nothing); None if something can happen now."""
        if any(not a.done for a in self.actors) or any(self._client_due(i) for i in self.instances) or (
                self.batch is not None and batched.client_due(self, self.batch)):
            return None
        moments = self._moments()
        if any(m <= self.time for m in moments) or not moments:
            return None
        return min(min(moments) + 0.001, self.time + JUMP)

    def _advance(self) -> bool:
        """Jump to the next moment something can happen; False if nothing ever will."""
        future = [m for m in self._moments() + [p.next_beat for p in self.processes if p.kind == "beat"]
                  if m > self.time]
        if not future:
            return False
        self.time = min(min(future) + 0.001, self.time + JUMP)
        return True


WEIGHTS = {"step": 12.0, "deliver": 6.0, "beat": 1.5, "client": 3.0, "batch": 3.0, "tick": 1.0}
