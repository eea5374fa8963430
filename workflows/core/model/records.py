"""The records a Store hands to the engine, and the messages a Transport carries. Each is defined
once here; the states and kinds they hold are the enums of ``core.model.states``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, TypeVar

from .states import LIVE, TERMINAL, OpKind, RunStatus, TimerKind  # noqa: F401 (their old home)

#: Attempts of one op are numbered 1..MAX_ATTEMPT_SUB; the outcome takes OUTCOME_SUB.
OUTCOME_SUB = 999
MAX_ATTEMPT_SUB = OUTCOME_SUB - 1


#: Sub-position of the record of how a child started at an op ended (see :func:`child_end_seq`).
CHILD_END_SUB = 0

#: History key of a run's result when it is kept outside the run item (``read_history`` never returns it).
RUN_RESULT_SEQ = -1


def event_seq(pos: int, sub: int = OUTCOME_SUB) -> int:
    """Return the history sort key of op ``pos`` (``sub`` 1..998: attempt records)."""
    if not 0 <= sub <= OUTCOME_SUB:
        raise ValueError(f"history sub-position out of range: {sub}")
    return pos * 1000 + sub


def child_end_seq(pos: int) -> int:
    """The history key, in the parent's history, of how the child started at op ``pos`` ended: sub 0,
    which neither an outcome (999) nor an attempt (1..998) takes. The child's end writes it."""
    return event_seq(pos, CHILD_END_SUB)


def attempt_seq(pos: int, attempt: int) -> int:
    """The history key of failed attempt ``attempt`` of op ``pos`` (attempts past 998 share sub-position 998)."""
    return event_seq(pos, min(max(attempt, 1), MAX_ATTEMPT_SUB))


@dataclass
class RunRecord:
    """One workflow run as stored."""

    run_id: str
    workflow: str
    status: str
    created_at: float
    updated_at: float = 0.0
    args: str = "[[],{}]"
    ended_at: float | None = None
    result: str | None = None
    error: str | None = None
    cursor: int = -1
    waiting: dict[str, Any] | None = None
    wake_seq: int = 0
    lease_expires_at: float | None = None
    recoveries: int = 0  # every claim of an expired lease by the reconciler (see core.storage.recovery)
    recovery_pending: int = 0  # recoveries sent that no worker has taken yet
    recovery_taken_at: int | None = None  # the cursor at which a worker last took a recovery
    recovery_faults: int = 0  # recoveries counted towards max_recovery_attempts
    cancel_requested: bool = False
    deadline: float | None = None
    idempotency_key: str | None = None
    parent_run_id: str | None = None
    parent_pos: int | None = None
    continued_from: str | None = None
    continued_to: str | None = None
    schedule_id: str | None = None
    fire_time: float | None = None
    code_version: str | None = None  # the code version that started the run (docs/versioning.md)
    forked_from: str | None = None  # the run this one was forked from, at op position ``forked_at``
    forked_at: int | None = None
    #: Requests counted for this run so far (see ``core.storage.metering``): DynamoDB reads and writes, SQS sends.
    ddb_reads: int = 0
    ddb_writes: int = 0
    sqs_sends: int = 0
    tags: dict[str, str] | None = None  # search attributes (see core.storage.tags)
    retain_until: float | None = None  # the TTL of an ended run's items, epoch seconds (see core.storage.retention)
    stamped_at: float | None = None  # when its items were last kept alive (None: never; see core.storage.retention)
    #: Continue-as-new (see core.storage.chains): the chain's first run, on its later runs (None on the first), and,
    #: on the first, the chain's latest run (set by each continuation, in its transaction).
    chain_head: str | None = None
    chain_last: str | None = None
    deferral: dict[str, Any] | None = None  # the last deferral to a worker that serves it (see core.admission.deferral)
    priority: str | None = None  # the level its messages go at: "high", "low" or None for normal (core.model.priority)
    start_at: float | None = None  # a delayed run's start time, epoch seconds (core.admission.delayed)
    #: The request id of the run's creation (until its first write after it): a fresh resume message's run
    #: is used unread only under a condition that the stored run still carries it (``Engine.resume``).
    req: str | None = field(default=None, compare=False, repr=False)
    #: The outcome of its last op, written by the end with the run (one request), when the resume that ran
    #: the op ended the run: a history record kept on the run item (see :func:`with_last_outcome`).
    last_outcome: EventRecord | None = field(default=None, compare=False, repr=False)

    @property
    def is_terminal(self) -> bool:
        """Whether the run has ended."""
        return self.status in TERMINAL


#: What a run's creation fixes and its replays use: the run a fresh resume message carries is used unread
#: only while the stored run holds these values (and its creation's ``req``), as created.
CREATED_FIELDS = ("workflow", "args", "deadline", "idempotency_key", "parent_run_id", "parent_pos", "continued_from",
                  "schedule_id", "fire_time", "code_version", "forked_from", "forked_at", "tags", "chain_head",
                  "priority")


def with_last_outcome(run: RunRecord | None, records: list[EventRecord]) -> list[EventRecord]:
    """A run's history records with the outcome its end carries (``RunRecord.last_outcome``) in its
    place: the history every reader of an ended run's history sees (``read_history`` alone misses it)."""
    last = None if run is None else run.last_outcome
    if last is None or any(e.seq == last.seq for e in records):
        return records
    return sorted([*records, last], key=lambda e: e.seq)


@dataclass(frozen=True)
class TimeRange:
    """Bounds on when runs were created, epoch seconds, both inclusive (``list_runs(created=...)``).

    Attributes:
        since: the earliest creation time, or None for no lower bound.
        until: the latest creation time, or None for no upper bound.
    """

    since: float | None = None
    until: float | None = None


#: No bounds on creation times.
ANY_TIME = TimeRange()


@dataclass(frozen=True)
class RunSummary:
    """What a listing index holds of a run: enough for a list of runs, without a read of the run."""

    run_id: str
    workflow: str
    status: str
    created_at: float
    ended_at: float | None = None
    parent_run_id: str | None = None
    schedule_id: str | None = None


@dataclass
class EventRecord:
    """One history record: an op's outcome (sub 999) or a failed attempt."""

    run_id: str
    seq: int
    kind: str
    status: str
    at: float
    name: str | None = None
    data: str | None = None
    error: str | None = None
    attempt: int | None = None
    started_at: float | None = None
    #: A sent step's outcome written by its message's worker together with the dispatch of the next
    #: op (``core.replay.marks``): that op's waiting (its kind, name and since); the op is in flight.
    next_waiting: dict[str, Any] | None = None

    @property
    def pos(self) -> int:
        """The op position this record belongs to."""
        return self.seq // 1000

    @property
    def is_outcome(self) -> bool:
        """Whether this is the op's final outcome (not an attempt record)."""
        return self.seq % 1000 == OUTCOME_SUB

    @property
    def is_child_end(self) -> bool:
        """Whether this is the record of how the child started at op :attr:`pos` ended."""
        return self.seq >= 0 and self.seq % 1000 == CHILD_END_SUB


@dataclass
class HookRecord:
    """A hook, found by the hash of its token."""

    token_hash: str
    run_id: str
    pos: int
    name: str
    status: str
    created_at: float
    expires_at: float | None = None
    schema: str | None = None
    payload: str | None = None
    completed_at: float | None = None  # stored as ``resumed_at``


def op_timer_id(run_id: str, pos: int, kind: str) -> str:
    """The id of op ``pos``'s timer of ``kind`` (derived, so re-suspending overwrites it)."""
    return f"{run_id}#{pos}#{kind}"


@dataclass
class TimerRecord:
    """A durable timer: sleep, hook or signal timeout, retry backoff, deadline."""

    timer_id: str
    kind: str
    run_id: str
    due_at: float
    pos: int | None = None
    data: str | None = None
    write_id: str | None = field(default=None, compare=False)  # a fresh id each write (stored as ``version``)


@dataclass(frozen=True)
class Suspension:
    """Where a run waits (``Store.suspend_run``): at op ``pos``, for what ``waiting`` says, with the
    timers that will wake it."""

    pos: int
    waiting: dict[str, Any]
    timers: list[TimerRecord] = field(default_factory=list)


@dataclass(frozen=True)
class RunEnding:
    """How a live run ends (``Store.finish_run``) and what the end writes with it.

    Attributes:
        status: a terminal status.
        result, error: the run's result (JSON) or error text.
        continued_to: the run continued as new (its successor's id).
        wake: a run (the parent) woken in the same transaction, unless it has ended; ``wake_record``:
            a history record of that run written with the wake (how its child ended).
        owner: the resume that ends the run (its claim lets it); ``last``: the outcome of the run's last
            op that ``owner`` ran and has not recorded, kept on the run item.
        fence: the first op position with no outcome: it gets an ``end`` record.
        timers: stored in the same write (a parent's ``parent_close`` timer).
        swept: the run goes to the retention index (see the port).
    """

    status: str
    result: str | None = None
    error: str | None = None
    continued_to: str | None = None
    wake: str | None = None
    wake_record: EventRecord | None = None
    owner: str | None = None
    last: EventRecord | None = None
    fence: int | None = None
    timers: list[TimerRecord] = field(default_factory=list)
    swept: bool = True


@dataclass
class SignalRecord:
    """A signal sent to a run, ordered by ``signal_key``; an update request (kept in the same table,
    keyed by its update id) ordered by ``order_number`` (``core.storage.rules.signal_time``, set by the store;
    None on a request stored by an older version, which is ordered by ``sent_at``)."""

    run_id: str
    signal_key: str
    name: str
    payload: str | None
    sent_at: float
    order_number: int | None = None


@dataclass
class BranchRecord:
    """The outcome of one branch of a fan-out."""

    index: int
    data: str | None
    error: str | None

    @property
    def closed(self) -> bool:
        """Whether this is no outcome but the slot the retention sweep closed (neither data nor error: a
        recorded outcome has one), so a branch of an ended run writes nothing there after the sweep."""
        return self.data is None and self.error is None


@dataclass
class SlotRecord:
    """One item of a limit in the flow table: who holds it, until when. ``number``: its slot number
    (the sort key): a concurrency slot's index, or a waiter's place (see docs/architecture.md)."""

    limit: str
    number: int
    holder: str | None
    expires_at: float | None


T = TypeVar("T")


@dataclass
class Page(Generic[T]):
    """One page of a listing; ``next_cursor`` is None on the last page."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]


@dataclass(frozen=True)
class Advance:
    """How a fire of the schedule's own timetable moves the schedule on (a manual fire moves nothing).

    Attributes:
        expected_next: the ``next_fire_at`` read (the condition of the write).
        next_fire: the fire after this one, or None when none is left.
        next_due: when ``next_fire`` is due (with its jitter).
    """

    expected_next: float
    next_fire: float | None
    next_due: float | None


@dataclass
class ScheduleRecord:
    """One schedule as stored; times are epoch seconds, ``spec`` is ``ScheduleSpec.to_dict()``."""

    schedule_id: str
    workflow: str
    spec: dict[str, Any]
    overlap: str
    args: str = "[[],{}]"
    state: str = "active"
    catchup_window: float | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    next_fire_at: float | None = None
    next_due_at: float | None = None
    due_at: float | None = None
    pending: float | None = None
    running: list[float] = field(default_factory=list)
    buffered: list[float] = field(default_factory=list)
    heads: dict[str, str] = field(default_factory=dict)
    last_fire_at: float | None = None
    last_run_id: str | None = None
    fired: int = 0
    skipped: int = 0
    last_error: str | None = None
    declared: bool = False
    revision: int = 0  # +1 on every change: an optimistic write's token (stored as ``version``)


def chain_key(fire: float) -> str:
    """The key of a fire time in a schedule's ``heads`` map."""
    return f"{fire:.6f}"


#: The message format a producer writes (a worker may refuse a format it does not know).
MESSAGE_FORMAT = 1


@dataclass(frozen=True)
class Branch:
    """Which branch of which fan-out a step message runs."""

    join: str
    index: int
    total: int
    fail_fast: bool = True
    #: The fan-out's completion criteria (core.ops.completion), if any: its join tallies instead of counting.
    criteria: tuple[int | None, int | None] | None = None
    #: A step candidate of a ``first_of`` race (core.ops.first): its result wakes the run, which decides.
    race: bool = False
    #: The run's workflow (a branch reads no run item: what its attempt is told to observers as).
    workflow: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The branch as JSON data."""
        data: dict[str, Any] = {"join": self.join, "index": self.index, "total": self.total,
                                "fail_fast": self.fail_fast}
        if self.race:
            data["race"] = True
        if self.workflow is not None:
            data["workflow"] = self.workflow
        return data if self.criteria is None else {**data, "criteria": list(self.criteria)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Branch | None:
        """The branch of a message (None for a plain step)."""
        if data is None:
            return None
        criteria = data.get("criteria")
        workflow = data.get("workflow")
        return cls(str(data["join"]), int(data["index"]), int(data["total"]), bool(data.get("fail_fast", True)),
                   None if criteria is None else (criteria[0], criteria[1]), bool(data.get("race", False)),
                   None if workflow is None else str(workflow))

    @property
    def pos(self) -> int:
        """The op position of the fan-out."""
        return int(self.join.rsplit("#", 1)[1])


@dataclass(frozen=True)
class StepMessage:
    """Run one attempt of a step at op ``pos`` of a run.

    ``resent``: recovery sends it again, so its outcome may already be recorded.
    ``format`` lets a worker refuse a message shape it does not know.
    """

    step: str
    run_id: str
    pos: int
    attempt: int
    args: str
    branch: Branch | None = None
    queue: str | None = None
    resent: bool = False
    format: int = MESSAGE_FORMAT
    priority: str | None = None  # the level it goes at (the step's, else its run's; core.model.priority)


@dataclass(frozen=True)
class ResumeMessage:
    """Resume a run. ``fresh``: the run as just created; its first delivery skips the
    history Query if the stored run (always read) is still as created."""

    run_id: str
    recovering: bool = False
    fresh: RunRecord | None = None
    format: int = MESSAGE_FORMAT
    priority: str | None = None  # the run's level (core.model.priority)
