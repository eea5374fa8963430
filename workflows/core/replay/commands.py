"""What a replay decides: one typed union of commands, committed by ``core.replay.commit``.

A resume replays the workflow function over the run's history. However the function
stops (it returns, raises, suspends, continues as new, or a durable call finds the
history stale, the run moved on, or a store call failed), :func:`decide` turns that
into ONE command, and the committer (:func:`workflows.core.replay.commit.commit`) is the one
place that matches it and turns it into store and transport calls. An op's outcome
recorded while the function runs (an inline step, a step run in place, a hook wait)
is a :class:`RecordOutcome`, committed by the same committer; so is a sent step's or a
branch's outcome (``core.ops.steps``, ``core.ops.fanout``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from ...errors import ConfigurationError, InvalidInput, PayloadUnavailable, SuspensionSwallowed, describe
from ..model.control import ContinueAsNew, ReplayStopped, StaleHistory, Suspend
from ..model.failures import capture
from ..model.records import (
    Branch,
    EventRecord,
    HookRecord,
    RunRecord,
    RunStatus,
    SignalRecord,
    StepMessage,
    TimerRecord,
)

if TYPE_CHECKING:
    from .context import WorkflowContext


@dataclass(frozen=True)
class RunEnd:
    """How a run ends: one value for every ending (``Engine.end``).

    ``owner``: the resume ending it (a run another resume holds with a live claim is not
    ended under it); ``continued_to``: the successor of a run that continued as new.
    """

    status: RunStatus
    result: str | None = None
    error: str | None = None
    continued_to: str | None = None
    owner: str | None = None

    @classmethod
    def completed(cls, result: str | None, owner: str | None = None) -> RunEnd:
        """The run returned ``result`` (encoded)."""
        return cls(RunStatus.COMPLETED, result=result, owner=owner)

    @classmethod
    def failed(cls, error: str, owner: str | None = None, failure: str | None = None) -> RunEnd:
        """The run failed with ``error`` (its text); ``failure``: the structured failure of what it
        raised (JSON), kept as a failed run's result, as a failed step's record keeps it."""
        return cls(RunStatus.FAILED, result=failure, error=error, owner=owner)

    @classmethod
    def cancelled(cls, owner: str | None = None) -> RunEnd:
        """The run's cancellation was requested."""
        return cls(RunStatus.CANCELLED, error="cancelled", owner=owner)

    @classmethod
    def timed_out(cls, owner: str | None = None) -> RunEnd:
        """The run passed its ``max_duration``."""
        return cls(RunStatus.TIMED_OUT, error="the run passed its max_duration", owner=owner)


# -- commands a durable call raises (inside ``Suspend``) ----------------------------------
@dataclass(frozen=True)
class Dispatch:
    """Mark op ``pos`` in flight, then send these step messages (one winner sends)."""

    pos: int
    calls: list[StepMessage]
    waiting: dict[str, Any]


@dataclass(frozen=True)
class Wait:
    """Suspend the run at op ``pos`` with these timers stored atomically, then send ``calls``
    (a race's step candidates). ``lease``: keep a lease while suspended (it covers the calls)."""

    pos: int
    waiting: dict[str, Any]
    timers: list[TimerRecord] = field(default_factory=list)
    calls: list[StepMessage] = field(default_factory=list)
    lease: bool = False


@dataclass(frozen=True)
class InFlight:
    """The op is in flight (dispatched, or its retry or slot is pending): nothing to write."""


# -- what a function's ending becomes ----------------------------------------------------
@dataclass(frozen=True)
class Complete:
    """The function returned ``value``: end the run completed (its result encoded on commit)."""

    value: Any


@dataclass(frozen=True)
class Fail:
    """End the run failed with ``error`` (``log``: say why in the worker's log too; ``failure``: the
    structured failure of what the workflow raised, JSON)."""

    error: str
    log: bool = False
    failure: str | None = None


@dataclass(frozen=True)
class Continue:
    """End the run as continued and start its successor with these arguments."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Defer:
    """Leave the run to a worker that serves it (``core.admission.deferral``), saying ``reason``."""

    reason: str


@dataclass(frozen=True)
class Halt:
    """This resume stops and writes nothing more (``reason`` is logged, if given): the run is
    someone else's, parked, or ended."""

    reason: str | None = None


@dataclass(frozen=True)
class Reload:
    """A write lost or the history was stale: read the run again and replay."""


@dataclass(frozen=True)
class Raise:
    """This process cannot go on (a store call failed, it is misconfigured): raise ``error``
    so the resume is retried; the run's fate is not decided."""

    error: BaseException


# -- an outcome, recorded while the function runs or from a step message --------------
@dataclass(frozen=True)
class RecordOutcome:
    """Record an op's outcome once: ``event`` in the run's history, or, for a fan-out
    branch, ``branch``'s result in its join (``event`` then carries its data and error).

    ``while_live``: written only while the run is live (one transaction with a check of the
    run), for outcomes that must never follow a cancel's end.
    """

    event: EventRecord
    branch: Branch | None = None
    while_live: bool = False


Command = Union[Dispatch, Wait, InFlight, Complete, Fail, Continue, Defer, Halt, Reload, Raise]


# -- writes a durable call needs answered before the function goes on ---------------------
@dataclass(frozen=True)
class Publish:
    """``set_event`` / ``write_stream``: the op's ``record`` and, in the same write, the item kept
    ``beside`` it (the key's latest value, or the stream's entry)."""

    record: EventRecord
    beside: EventRecord


@dataclass(frozen=True)
class CreateHook:
    """A hook, its expiry timer and its op's ``created`` record (holding ``data``), in one write."""

    hook: HookRecord
    timer: TimerRecord | None
    data: str


@dataclass(frozen=True)
class AnswerUpdate:
    """An update handled at the frontier: its op ``record`` and its ``answer``, the ``request``
    removed, while resume ``owner`` holds the run."""

    record: EventRecord
    answer: EventRecord
    request: SignalRecord
    owner: str | None


@dataclass(frozen=True)
class RefuseUpdate:
    """An update refused: its ``answer`` stored and its ``request`` removed."""

    answer: EventRecord
    request: SignalRecord


@dataclass(frozen=True)
class DropRequests:
    """Requests of the chain anchored at ``anchor`` already answered (retries): removed."""

    anchor: str
    keys: list[str]


@dataclass(frozen=True)
class ExpireHook:
    """A pending hook past its expiry marked expired (the write that decides it timed out)."""

    token_hash: str


@dataclass(frozen=True)
class MarkInFlight:
    """Op ``pos`` of run ``run_id`` marked in flight for a message (``Store.advance_run``), while resume
    ``owner`` may move it (``recovering``: also where its own claim put the cursor)."""

    run_id: str
    pos: int
    waiting: dict[str, Any]
    owner: str | None
    recovering: bool = False


@dataclass(frozen=True)
class SettleJoin:
    """A fan-out's join read whole and closed to new counts: its results and whether all are in."""

    join: str
    total: int


@dataclass(frozen=True)
class JoinBranch:
    """A branch of ``total`` counted in its join: whether this count completed it."""

    join: str
    index: int
    total: int


@dataclass(frozen=True)
class TallyBranch:
    """A branch of a fan-out with completion criteria tallied (idempotently) as succeeded or failed."""

    join: str
    index: int
    failed: bool


@dataclass(frozen=True)
class WakeAt:
    """Run ``run_id`` woken only while its cursor is still op ``pos`` (a race's step candidate)."""

    run_id: str
    pos: int


@dataclass(frozen=True)
class ClaimRun:
    """Resume ``owner`` made the one executor of the run's inline steps from op ``pos`` on
    (``as_created``: only while the stored run is still this run, as created)."""

    run_id: str
    pos: int
    owner: str
    waiting: dict[str, Any]
    as_created: RunRecord | None = None


@dataclass(frozen=True)
class RenewLease:
    """The run's lease extended while its cursor is ``pos`` (``since``: anywhere from ``since`` to
    ``pos``; ``pos`` None: wherever it is)."""

    run_id: str
    pos: int | None = None
    since: int | None = None


@dataclass(frozen=True)
class RecordAttempt:
    """A failed attempt's record, unless its sub-position holds it or a later one, only while run
    ``while_live`` (if given) is live."""

    event: EventRecord
    while_live: str | None = None


@dataclass(frozen=True)
class ScheduleRetry:
    """A sent step's next attempt: its retry timer, due after ``backoff`` seconds."""

    timer: TimerRecord
    backoff: float


Immediate = Union[Publish, CreateHook, AnswerUpdate, RefuseUpdate, DropRequests, ExpireHook, MarkInFlight,
                  SettleJoin, JoinBranch, TallyBranch, WakeAt, ClaimRun, RenewLease, RecordAttempt, ScheduleRetry]


def decide(ctx: WorkflowContext, value: Any, raised: BaseException | None) -> Command:
    """The one command a replay's function ending decides: ``value`` returned, or ``raised``.

    Whatever stopped the function first counts (``ctx.halt``): workflow code that swallowed
    a suspension and went on fails the run (``SuspensionSwallowed``).
    """
    if isinstance(ctx.fault, PayloadUnavailable):  # gone for good: no retry brings it back
        return Fail(describe(ctx.fault), log=True)
    if ctx.fault is not None:  # a store call failed: retry the resume, never fail the run
        return Raise(ctx.fault)
    if isinstance(ctx.halted, ReplayStopped):
        return Halt(f"{ctx.halted}; this resume stops")
    if isinstance(ctx.halted, StaleHistory):
        return Reload()
    fatal = ctx.fatal
    if fatal is None and ctx.halted is not None and raised is not ctx.halted:
        fatal = SuspensionSwallowed(*ctx.halted_op())
    if fatal is not None:
        return Fail(describe(fatal), log=True)
    if isinstance(raised, Suspend):
        action = raised.args[0] if raised.args else None
        return action if isinstance(action, (Dispatch, Wait)) else InFlight()
    if isinstance(raised, ContinueAsNew):
        return Continue(raised.args, raised.kwargs)
    if isinstance(raised, ConfigurationError) and not isinstance(raised, InvalidInput):
        return Raise(raised)  # this process is misconfigured (e.g. no hook secret): the run stays live
    # (bad input from the workflow's own code, an invalid signal or update name, fails it below)
    if raised is not None:  # the workflow raised: the run fails with the error text and its typed failure
        return Fail(describe(raised), failure=capture(raised).to_json())
    return Complete(value)

