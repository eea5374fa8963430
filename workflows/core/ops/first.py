"""``first_of``: wait for whichever of several things comes first, decided once.

A race is one op. Its candidates are a signal (:func:`signal`), a timer (:func:`timer`), a
hook (its handle), a step call (``step.s(...)``) or a child (its handle). Step candidates are
sent as branches of the race's join (``<run id>#<pos>``, as a fan-out's, marked ``race``), so
they take no op position of their own; a branch's result wakes the run instead of counting.

The replay decides: it looks at the candidates in the order given and the first one that has
happened wins (so when several happened while the run was busy, the first listed wins). The
winner is recorded once as the op's outcome, with its value (a signal's key and payload, a
step's or a child's result or failure, a hook's payload), so replays read the decision and
never race again. The others are settled as they would be without the race: a signal that
lost stays pending for a later wait, a hook stays pending for a later ``wait()``, a child runs
on (``child.result()`` later returns its end), a step that lost runs on (if it started) and its
result is recorded in the join and never returned, a timer that lost wakes the run once, to no
effect.

While the race waits the run is suspended; with step candidates it keeps a lease (renewed by
the steps' heartbeats) that covers the step messages, whose loss recovery repairs by sending
them again, as for a fan-out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ...durations import Duration, to_seconds
from ...errors import InvalidArguments, WaitTimeout
from ..model.control import Suspend
from ..model.embed import embed, unembed
from ..model.failures import child_failure, step_failure
from ..model.join_layout import RACE_SEPARATOR
from ..model.names import check_name
from ..model.priority import step_priority
from ..model.records import Branch, OpKind, StepMessage, TimerKind
from ..model.states import CandidateKind, EventStatus, HookStatus, RunStatus
from ..replay.commands import ExpireHook, Wait
from ..replay.commit import apply
from ..replay.updates import before_signal
from ..storage.chains import chain_anchor
from .fanout import join_id

if TYPE_CHECKING:
    from ...decorators import StepCall
    from ..replay.context import WorkflowContext
    from .waits import ChildHandle, HookHandle


@dataclass(frozen=True)
class SignalCandidate:
    """A race candidate: the next signal ``name`` sent to the run (:func:`signal`)."""

    name: str


@dataclass(frozen=True)
class TimerCandidate:
    """A race candidate: a durable timer of ``seconds`` from when the race began (:func:`timer`)."""

    seconds: float


Candidate = Union[SignalCandidate, TimerCandidate, "HookHandle", "StepCall", "ChildHandle"]


def signal(name: str) -> SignalCandidate:
    """A candidate of :func:`first_of`: the oldest signal ``name`` this run has not taken."""
    return SignalCandidate(check_name(name, "signal name"))


def timer(duration: Duration) -> TimerCandidate:
    """A candidate of :func:`first_of`: a durable timer that fires ``duration`` after the race began."""
    return TimerCandidate(to_seconds(duration, what="timer duration"))


@dataclass(frozen=True)
class First:
    """The winner of a :func:`first_of` race.

    Attributes:
        key: the keyword the candidate was given under, or its position among the positional ones.
        index: its position among all candidates (the positional ones first, then the keywords).
        kind: ``"signal"``, ``"timer"``, ``"hook"``, ``"step"`` or ``"child"``.
        value: a signal's or a hook's payload, a step's or a child's result; None for a timer.
    """

    key: str | int
    index: int
    kind: str
    value: Any = None


def _kind(candidate: Any) -> tuple[str, str]:
    """A candidate's kind and label (its name in the op's name)."""
    from .waits import ChildHandle, HookHandle  # waits imports async_workflow, which imports this module

    if isinstance(candidate, SignalCandidate):
        return CandidateKind.SIGNAL, candidate.name
    if isinstance(candidate, TimerCandidate):
        return CandidateKind.TIMER, f"{candidate.seconds:g}s"
    if isinstance(candidate, HookHandle):
        return CandidateKind.HOOK, candidate.name
    if hasattr(getattr(candidate, "step", None), "definition") and hasattr(candidate, "args"):  # a StepCall
        return CandidateKind.STEP, candidate.step.name
    if isinstance(candidate, ChildHandle):
        return CandidateKind.CHILD, candidate.workflow
    raise InvalidArguments(f"first_of takes signal(name), timer(duration), a hook, a step call (step.s(...)) or "
                           f"a child's handle; got {candidate!r}")


@dataclass
class _Race:
    ctx: WorkflowContext
    pos: int
    keys: list[str | int]
    candidates: list[Any]
    kinds: list[tuple[str, str]]

    @property
    def name(self) -> str:
        return RACE_SEPARATOR.join(f"{kind}:{label}" for kind, label in self.kinds)

    @property
    def join(self) -> str:
        return join_id(self.ctx.run.run_id, self.pos)

    def steps(self) -> list[int]:
        """The candidate indexes of the step calls, in order (branch j is the j-th of them)."""
        return [i for i, (kind, _) in enumerate(self.kinds) if kind == CandidateKind.STEP]

    def waiting(self) -> dict[str, Any]:
        """What the run waits on, as stored while the race is open."""
        run = self.ctx.run
        if run.cursor == self.pos and (run.waiting or {}).get("kind") == OpKind.FIRST_OF.value:
            return run.waiting or {}
        return {}


def first_of(ctx: WorkflowContext, candidates: tuple[Any, ...], named: dict[str, Any]) -> First:
    """Wait for the first of ``candidates`` (positional, then keyword) to happen; return it.

    Raises:
        InvalidArguments: no candidate, or one that cannot race.
        StepFailed (or the declared type): the winning step failed.
        ChildFailed: the winning child failed, was cancelled or timed out.
        WaitTimeout: the winning hook expired.
    """
    won, error = race(ctx, candidates, named)
    if error is not None:
        raise error
    return won


def race(ctx: WorkflowContext, candidates: tuple[Any, ...],
         named: dict[str, Any]) -> tuple[First, BaseException | None]:
    """:func:`first_of`, returning the winner and, if it failed (a step, a child, an expired hook), its
    error instead of raising it (``asyncio.wait`` settles the winning call with it)."""
    keys: list[str | int] = [*range(len(candidates)), *named]
    every = [*candidates, *named.values()]
    if not every:
        raise InvalidArguments("first_of needs at least one candidate")
    race = _Race(ctx, -1, keys, every, [_kind(c) for c in every])
    pos, event = ctx.next_op(OpKind.FIRST_OF, race.name)
    race.pos = pos
    if event is None:
        decided = _decide(race)
        if decided is None:
            raise _wait(race)
        if unembed(decided, "payload")[0].get("kind") == CandidateKind.SIGNAL and not race.steps():
            # updates sent before the winning signal are handled first, as for wait_for_signal
            race.pos = pos = before_signal(ctx, pos, race.name, OpKind.FIRST_OF)
        event = ctx.record(pos, OpKind.FIRST_OF, EventStatus.WON, name=race.name, data=decided)
    return _winner(race, event.data or "{}")


def _decide(race: _Race) -> str | None:
    """The record data of the first candidate that happened (in the order given), or None."""
    ctx, waiting = race.ctx, race.waiting()
    results = None
    if race.steps() and waiting:  # sent (the race waited before): their results are in the join
        results = {r.index: r for r in ctx.store.branch_results(race.join, len(race.steps()))}
    for index, (candidate, (kind, _)) in enumerate(zip(race.candidates, race.kinds, strict=True)):
        meta: dict[str, Any] = {"index": index, "kind": kind}
        if kind == CandidateKind.SIGNAL:
            pending = [s for s in ctx.store.signals(chain_anchor(ctx.run), candidate.name)
                       if s.signal_key not in ctx.consumed_signals]
            if pending:
                return embed({**meta, "status": EventStatus.RECEIVED, "signal": pending[0].signal_key},
                             pending[0].payload or "null")
        elif kind == CandidateKind.TIMER:
            due = _due(race, index, waiting)
            if ctx.now() >= due:
                return embed({**meta, "status": EventStatus.FIRED}, "null")
        elif kind == CandidateKind.HOOK:
            found = _hook(ctx, candidate)
            if found is not None:
                status, payload = found
                return embed({**meta, "status": status}, payload or "null")
        elif kind == CandidateKind.STEP and results is not None:
            branch = results.get(race.steps().index(index))
            if branch is not None and branch.error is None:
                return embed({**meta, "status": EventStatus.COMPLETED}, branch.data or "null")
            if branch is not None:
                failed = {"status": EventStatus.FAILED, "error": branch.error, "failure": branch.data}
                return embed({**meta, **failed}, "null")
        elif kind == CandidateKind.CHILD:
            ended = candidate._child_end()
            if ended is not None:
                failed = {"error": ended.error} if ended.status != RunStatus.COMPLETED else {}
                return embed({**meta, "status": ended.status, "child": candidate.run_id, **failed},
                             ctx.adopt(ended.data) or "null")
    return None


def _due(race: _Race, index: int, waiting: dict[str, Any]) -> float:
    """Timer ``index``'s due time: fixed when the race first waited (timers never move)."""
    dues = waiting.get("dues") or {}
    if str(index) in dues:
        return float(dues[str(index)])
    return race.ctx.now() + race.candidates[index].seconds


def _hook(ctx: WorkflowContext, handle: HookHandle) -> tuple[str, str | None] | None:
    """A hook candidate's end: ("resumed", payload) or ("timed_out", None); None while pending."""
    hook = ctx.store.get_hook(handle.token_hash)
    if hook is None:
        return None
    if hook.status == HookStatus.PENDING and hook.expires_at is not None and ctx.now() >= hook.expires_at \
            and apply(ctx.store, ExpireHook(handle.token_hash)):
        hook.status = HookStatus.EXPIRED
    if hook.status == HookStatus.RESUMED:
        return EventStatus.RESUMED, hook.payload
    if hook.status == HookStatus.PENDING:
        return None
    return EventStatus.TIMED_OUT, None


def _wait(race: _Race) -> Suspend:
    """Suspend the run at the race: its earliest timer stored, its step calls sent (the first time,
    or again on recovery those without a result), a lease kept while a step may be in flight."""
    ctx, pos, waiting = race.ctx, race.pos, race.waiting()
    dues = {str(i): _due(race, i, waiting) for i, (kind, _) in enumerate(race.kinds) if kind == CandidateKind.TIMER}
    of_kind = {kind: [c for c, (k, _) in zip(race.candidates, race.kinds, strict=True) if k == kind]
               for kind in (CandidateKind.SIGNAL, CandidateKind.HOOK, CandidateKind.CHILD)}
    stored: dict[str, Any] = {"kind": OpKind.FIRST_OF.value, "name": race.name, "dues": dues,
                              "since": waiting.get("since", ctx.now()),
                              "signals": sorted({c.name for c in of_kind[CandidateKind.SIGNAL]}),
                              "hooks": [c.token_hash for c in of_kind[CandidateKind.HOOK]],
                              "children": [c.run_id for c in of_kind[CandidateKind.CHILD]]}
    timers = []
    if dues:
        due = min(dues.values())
        timers.append(ctx.timer(pos, TimerKind.WAKE, due))
        stored.update(due=due, timer=timers[0].timer_id)
    calls = _calls(race) if race.steps() and not ctx.in_flight(pos) else []
    return ctx.halt(Suspend(Wait(pos, stored, timers, calls=calls, lease=bool(race.steps()))))


def _calls(race: _Race) -> list[StepMessage]:
    """The step messages of the race's step candidates that have no result yet."""
    ctx, steps = race.ctx, race.steps()
    recorded: set[int] = set()
    attempts: dict[int, int] = {}
    if ctx.recovering:  # a re-send goes on from its last recorded failure; a recorded branch is not re-sent
        recorded = {r.index for r in ctx.store.branch_results(race.join, len(steps))}
        for failed in ctx.store.read_history(race.join):
            attempts[failed.pos] = max(attempts.get(failed.pos, 0), failed.attempt or 0)
    messages = []
    for branch_index, index in enumerate(steps):
        if branch_index in recorded:
            continue
        call = race.candidates[index]
        step = call.step.definition
        args = ctx.encode([list(call.args), call.kwargs], f"arguments of step {step.name!r} in first_of")
        branch = Branch(race.join, branch_index, len(steps), fail_fast=False, race=True)
        messages.append(StepMessage(step.name, ctx.run.run_id, race.pos, attempts.get(branch_index, 0) + 1, args,
                                    branch=branch, queue=step.queue,
                                    priority=step_priority(step.priority, ctx.run.priority)))
    return messages


def _winner(race: _Race, data: str) -> tuple[First, BaseException | None]:
    """The recorded winner (the same on every replay), and its failure, if it failed."""
    meta, payload = unembed(data, "payload")
    index = int(meta["index"])
    kind, status = str(meta["kind"]), str(meta.get("status"))
    won = First(race.keys[index], index, kind)
    if kind == CandidateKind.SIGNAL:
        race.ctx.consumed_signals.add(str(meta.get("signal", "")))
    if kind == CandidateKind.STEP and status == EventStatus.FAILED:
        return won, step_failure(race.kinds[index][1], meta.get("error"), meta.get("failure"))
    if kind == CandidateKind.CHILD and status != RunStatus.COMPLETED:
        return won, child_failure(str(meta.get("child")), status, meta.get("error"), payload)
    if kind == CandidateKind.HOOK and status == EventStatus.TIMED_OUT:
        return won, WaitTimeout(f"hook {race.kinds[index][1]!r} timed out")
    value = None if kind == CandidateKind.TIMER else race.ctx.decode(payload)
    return First(race.keys[index], index, kind, value), None

