"""The ports of the core: what the engine needs from storage, messaging and time.

The engine depends on these protocols only. Adapters implement them: the DynamoDB
store (``persistence``), the Celery/SQS transport (``workflows.celery``) and the
system clock; ``workflows.memory`` implements all three in memory for tests and
the simulator.

Every write below is built once, as a write plan (``core/storage/plans.py``), by ``core/storage/writes``;
a store commits plans and answers reads. Conditional-write semantics every Store must keep
(the engine's correctness rests on them):

* A write that "returns False" or "returns None" did not apply because its
  condition did not hold; nothing else changed. Any other failure raises a
  ``workflows.errors.StorageError`` (``Throttled`` for throttling), and the write
  may or may not have been applied.
* Writes described as *one transaction* apply all-or-nothing.
* History outcome records, branch results and run creations are write-once
  (``attribute_not_exists``): a second write of the same key returns False.
  Failed-attempt records keep the latest attempt (see ``record_attempt``).
* A write retried after a lost response (the SDK's retry of a request already
  applied) must be recognised as the same request where the method says so.
* No method scans: every read is by key or a Query of an index, paged to the end.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from ..model.batches import BatchRecord, Progress
from ..model.records import (
    ANY_TIME,
    Advance,
    BranchRecord,
    EventRecord,
    HookRecord,
    Page,
    ResumeMessage,
    RunEnding,
    RunRecord,
    RunSummary,
    ScheduleRecord,
    SignalRecord,
    SlotRecord,
    StepMessage,
    Suspension,
    TimeRange,
    TimerRecord,
)


class Clock(Protocol):
    """Wall-clock time in epoch seconds."""

    def now(self) -> float:
        """The current time."""


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        """``time.time()``."""
        return time.time()


class Transport(Protocol):
    """Sends the two kinds of message the engine uses."""

    def send_step(self, message: StepMessage) -> None:
        """Queue one attempt of a step."""

    def send_steps(self, messages: list[StepMessage]) -> None:
        """Queue several step attempts (a fan-out's branches, a race's step candidates), in as few
        requests as the broker allows; in order."""

    def send_resume(self, message: ResumeMessage) -> None:
        """Queue a resume of a run."""

    def runs_here(self, step: str, queue: str | None) -> bool:
        """Whether this process consumes the queue a step's messages go to (and is not stopping)."""

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        """Set aside a message that can never be processed (e.g. for an unknown run)."""


class Blobs(Protocol):
    """Large payloads as objects by key (an S3 bucket; a dict in memory); see ``core/storage/payloads.py``.

    Keys are content addresses within a run's prefix, so a put retried, duplicated or raced by
    another writer of the same payload writes the same bytes: every put is harmless. An object
    written or copied carries no expiry; one marked ended expires by the bucket's lifecycle rule
    (``payload_expiry_days`` after the mark, which counts as its last write).
    """

    def put_blob(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (replacing the same bytes), not marked ended. Raises StorageError."""

    def get_blob(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None if there is no such object. Raises StorageError."""

    def copy_blob(self, source: str, target: str) -> bool:
        """Copy the object ``source`` to ``target`` (server side, one request), not marked ended;
        False if there is no object ``source``. Raises StorageError."""

    def mark_ended(self, key: str) -> bool:
        """Mark the object ``key`` ended, which also counts as its last write (the lifecycle rule
        counts its days from there); False if there is no such object. Raises StorageError."""

    def list_blobs(self, prefix: str) -> list[tuple[str, float]]:
        """Every object under ``prefix``: its key and when it was last written (epoch seconds),
        in key order. Raises StorageError."""

    def delete_blob(self, key: str) -> None:
        """Delete the object ``key`` (nothing if there is none). Raises StorageError."""


class RunStore(Protocol):
    """Runs: the only mutable per-run state, always written conditionally."""

    def now(self) -> float:
        """The store's clock."""

    def create_run(self, run: RunRecord, *, timers: list[TimerRecord] = ...) -> tuple[str, bool]:
        """Store a new pending, leased run (with its idempotency guard and timers, in one
        transaction). Returns ``(run_id, created)``: for a known key or id, the existing
        run's id and False; a retry of this very request returns True. Raises PayloadTooLarge
        for arguments over ``inline_payload_bytes`` (larger ones are stored as a reference
        to the blob store, see ``core/storage/payloads.py``)."""

    def run_for_key(self, key: str) -> str | None:
        """The run an idempotency key maps to."""

    def get_run(self, run_id: str) -> RunRecord:
        """A run (consistent read), with its ``result`` wherever it is kept. Raises RunNotFound."""

    def find_run(self, run_id: str) -> RunRecord | None:
        """A run, or None."""

    def get_runs(self, run_ids: list[str]) -> list[RunRecord]:
        """The runs that exist among ``run_ids``, in that order."""

    def list_runs(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                  cursor: str | None = None, created: TimeRange = ANY_TIME,
                  tag: tuple[str, str] | None = None) -> Page[RunRecord]:
        """One page of runs, newest first, by status, by workflow or by ``tag`` (key, value):
        an index Query. ``tag`` combines with ``workflow`` (and ``created``), not with
        ``status`` (ValueError)."""

    def list_run_summaries(self, *, status: str | None = None, workflow: str | None = None, limit: int = 50,
                           cursor: str | None = None, created: TimeRange = ANY_TIME) -> Page[RunSummary]:
        """``list_runs`` from the listing index alone (its projected fields): one Query a page, no run read."""

    def count_runs(self, status: str, *, since: float | None = None, until: float | None = None,
                   cap: int = 10_000) -> tuple[int, bool]:
        """How many runs have ``status`` (created within ``since``..``until``), counting at most
        ``cap``: returns the count and whether it stopped at the cap (an index Query, Select COUNT)."""

    def advance_run(self, run_id: str, pos: int, waiting: dict[str, Any], *, recovering: bool = False,
                    owner: str | None = None) -> bool:
        """Mark op ``pos`` in flight and renew the lease. Condition: the run is live, not
        cancel-requested, its cursor is below ``pos`` (at most ``pos`` when recovering), and no
        resume other than ``owner`` holds it with a live claim (``claim_run``).
        A retry of this very request (its response lost) returns True."""

    def suspend_run(self, run_id: str, at: Suspension, seen_wake: int, *, lease: bool = False,
                    first: bool = False) -> bool:
        """Suspend at ``at.pos`` (lease removed; renewed instead if ``lease``: a race's step messages
        are in flight) and store ``at.timers``, in one transaction.
        Condition: ``wake_seq`` still equals ``seen_wake`` and the run is live; with ``first``, also
        that no resume reached ``pos`` yet (the cursor is before it): the one resume that wins sends
        the race's step messages (two resumes of one wake never both send them)."""

    def wake_run(self, run_id: str, *, cancel: bool = False, at: int | None = None) -> RunRecord | None:
        """Bump ``wake_seq`` and lease a leaseless run (optionally request cancel). ``at``: only if
        the run's cursor is that op position (a race's step candidate wakes only the race).
        Returns the run after the update, or None if it does not exist, has ended or moved on."""

    def claim_run(self, run_id: str, pos: int, owner: str, waiting: dict[str, Any], *,
                  as_created: RunRecord | None = None) -> bool:
        """Make resume ``owner`` the one executor of the run's inline steps from ``pos`` on.
        Condition: live, not cancel-requested, cursor at most ``pos``, op ``pos`` never marked in
        flight for a message (``advance_run``: its message may be running it), and not held by
        another resume whose lease is live. ``suspend_run``, ``advance_run`` and ends release it.
        ``as_created``: also, the stored run is still this run (the run a fresh resume message
        carried: its creation's request id and created fields), as created (pending, cursor -1,
        never woken or recovered), which confirms that run without reading it."""

    def renew_lease(self, run_id: str, pos: int | None = None, *, since: int | None = None) -> bool:
        """Extend the lease of a live run (whose cursor is ``pos``, if given; with ``since``, anywhere
        from ``since`` to ``pos``) that no one asked to cancel (a refused renewal tells the executor
        to look at the run)."""

    def finish_run(self, run_id: str, ending: RunEnding) -> RunRecord | None:
        """End a live run; exactly one caller wins (a retry of the winning request, its
        response lost, still wins). Returns the ended run, or None.

        ``last``: the outcome of the run's last op, which resume ``owner`` ran under its claim and
        has not recorded: the end keeps it on the run item (``RunRecord.last_outcome``; readers of
        the history merge it in with ``records.with_last_outcome``), in the same single write.
        Condition then: the run is live and ``owner`` still holds it (no one else can have
        recorded that op: a claim of the run, its recovery, a dispatch and a cancel's end all
        release or refuse ``owner``'s claim first).

        Condition: no resume claims the run (``claim_run``), or resume ``owner`` does, or
        the claim's lease has expired: a run whose executor is running its inline steps
        is ended by that executor (it sees a cancel or deadline at its next renewal),
        never under it.

        ``wake``: a run (the parent) woken in the same transaction as the end, unless it
        has ended; ``wake_record``: a history record of that run (how its child ended, see
        ``core.model.records.child_end_seq``) written in that transaction too (unconditionally: a
        retry writes the same record), never without the wake. Any result up to
        ``inline_payload_bytes`` must fit beside any arguments (a
        store may keep it apart); every read of the run returns it.

        ``fence``: the first op position with no outcome. The same transaction writes an
        ``end`` record as its outcome (if it has none yet), so an op still running
        (a sent step, a stalled executor's inline step) records nothing after the end.

        ``timers``: stored in the same write (a parent's ``parent_close`` timer, ``core.replay.children``).

        ``swept``: the end puts the run in the retention index, for beat's sweep to stamp its other
        items; False only when they all expire late enough already (``core.storage.retention.needs_sweep``).

        Raises:
            OutcomeRecorded: the run is live and the fence position has an outcome now.
        """

    def continue_run(self, run_id: str, successor: RunRecord, timers: list[TimerRecord] = ...) -> RunRecord | None:
        """End a live run as ``continued`` and create its successor (pending, leased) with
        its timers, in one transaction. Returns the ended run, or None (nothing written).

        The successor's ``chain_head`` names the chain's anchor (``core.storage.chains``). If it is this
        run, the end writes no TTL and does not enter the retention index (the anchor is kept
        while the chain lives) and sets ``chain_last`` to the successor; otherwise the same
        transaction sets ``chain_last`` on the anchor (condition: it exists)."""

    def defer_run(self, run_id: str, seen_wake: int, timer: TimerRecord,
                  deferral: dict[str, Any] | None = None, status: str = "suspended") -> bool:
        """Leave a run this worker cannot serve (unknown workflow, code version not served) to
        another, or park it until ``timer`` (a gate: a debounce window, a workflow limit, a start
        time, whose runs are parked as ``delayed``): ``status`` with its cursor and ``waiting``
        kept, lease and claim removed, ``deferral`` (if given: why, since when, how many tries;
        ``core.admission.deferral``) set on the run, and ``timer`` stored, in one transaction. Condition: the
        run is live, ``wake_seq`` still equals ``seen_wake``, and no resume claims it with a
        live lease. False: nothing written. No recovery is counted."""

    def stale_runs(self, limit: int = 100) -> list[str]:
        """Live runs whose lease has expired (the sparse lease index), at most ``limit``;
        a sharded store gives every shard a fair share, so no shard starves."""

    def claim_recovery(self, seen: RunRecord) -> RunRecord | None:
        """Take over an expired lease (one claimer wins; a retry of the winning request
        still wins), release the run from a dead executor (``claim_run``) and count the
        recovery as ``core.storage.recovery.recovery_claim`` decides from ``seen`` (the run as read):
        every claim adds to ``recoveries`` and ``recovery_pending`` and sets the lease it
        decides; a counted one adds to ``recovery_faults``. Condition: the lease expired, the
        run is live, and its cursor and ``recovery_pending`` are as read. None: not claimed."""

    def take_recovery(self, seen: RunRecord) -> bool:
        """A worker took the run while a recovery was pending (``seen``: the run as read):
        remove ``recovery_pending``, set ``recovery_taken_at`` to the cursor read, and extend
        a lease that ends within one run lease to one run lease from now. Condition: pending,
        live, and the lease as read. False: nothing written."""


class HistoryStore(Protocol):
    """The append-only history, keyed by (run id, seq)."""

    def record_event(self, event: EventRecord) -> bool:
        """Append a record unless its key is taken; True if this call wrote it (also when
        the write applied and its response was lost)."""

    def record_event_while_live(self, event: EventRecord) -> bool:
        """Append a history record once, and only while its run is live (one transaction with
        a check of the run): nothing is written after an end. False if the slot was taken or
        the run has ended."""

    def get_outcome(self, run_id: str, pos: int) -> EventRecord | None:
        """The recorded outcome of op ``pos``."""

    def get_event(self, run_id: str, seq: int) -> EventRecord | None:
        """The history record at ``seq`` (a GetItem, consistent), or None."""

    def read_history(self, run_id: str, after_seq: int = -1, page_size: int | None = None,
                     until_seq: int | None = None) -> list[EventRecord]:
        """The records after ``after_seq`` and up to ``until_seq`` (if given), in order (never a
        run result kept apart, whose seq is -1)."""

    def record_attempt(self, event: EventRecord, while_live: str | None = None) -> bool:
        """Write a failed-attempt record (key ``attempt_seq(pos, attempt)``) unless its sub-position
        holds this attempt or a later one (``attribute_not_exists(seq) OR attempt < :attempt``);
        True if written (also when the write applied and its response was lost). Attempts past
        998 share sub-position 998, which keeps the latest. ``while_live``: a run id; the record
        is written only while that run is live (one transaction with a check of the run), so
        an attempt that fails after a cancel ended its run records nothing.

        Every kind of step records its attempts here. A fan-out branch's attempts are keyed in
        the history of its join: ``run_id`` is the join id (``<run id>#<pos>``, never a run's
        id) and the position is the branch index, so each branch has its own sub-positions and a read
        of the run's history never returns them."""

    def copy_history(self, events: list[EventRecord]) -> None:
        """Write these history records as given (unconditional, in batches): the copied
        outcomes of a fork, written before the fork's run exists, so no one else writes its
        history yet and a retry writes the same records."""

    def schedule_retry(self, retry: TimerRecord, backoff: float) -> bool:
        """Store a failed attempt's retry timer and extend the run's lease over the backoff, in
        one transaction; False (nothing written) if the run has ended. The attempt's record is
        written after it (:meth:`record_attempt`): so never for an ended run, and a late copy,
        whose record loses, still stores its timer and lease."""


class TimerStore(Protocol):
    """Timers in a sharded due-time index."""

    def put_timer(self, timer: TimerRecord) -> None:
        """Store or replace a timer."""

    def due_timers(self, limit: int = 500, page_size: int | None = None) -> list[TimerRecord]:
        """Timers due now (``due_at <= now``: never early), at most ``limit``, a fair
        share from every shard."""

    def claim_timer(self, timer_id: str, write_id: str | None = None) -> bool:
        """Take the firing of a timer for ``lease_seconds``; True for the one caller that
        took it (a retry of its own request, its response lost, too). ``write_id``: the timer's
        write id (``TimerRecord.write_id`` as read from ``due_timers``): only that write of it,
        so a sweep that read a retry timer before the run wrote its next retry under the same id
        cannot take that one. The
        claimer deletes the timer once it acted; if it died, a sweep takes it after the lease."""

    def delete_timer(self, timer_id: str, write_id: str | None = None) -> None:
        """Delete a timer; a missing one is fine. ``write_id``: the timer's write id (as read from
        ``due_timers``): only that write of it; a timer written again since (a run that suspended again on
        it, e.g. when clocks disagree on whether it is due) stays."""


class HookStore(Protocol):
    """Hooks, found by the hash of their token (the raw token is never stored)."""

    def create_hook(self, hook: HookRecord, timer: TimerRecord | None, run_id: str, pos: int,
                    data: str) -> EventRecord | None:
        """Store the hook, its expiry timer and the op's outcome in one transaction, only
        while the run is live; return the recorded outcome (this call's, or a concurrent
        replay's), or None if the run has ended (nothing written)."""

    def get_hook(self, token_hash: str) -> HookRecord | None:
        """The hook with this token hash."""

    def complete_hook(self, token_hash: str, payload: str) -> HookRecord:
        """Complete a pending, unexpired hook exactly once and wake its run, in one
        transaction (a retry of this very request is recognised and succeeds). Raises
        HookNotFound, HookExpired, HookAlreadyResumed, or HookClosed (also when the hook is
        pending but its run has ended)."""

    def expire_hook(self, token_hash: str) -> bool:
        """Mark a pending hook expired; False if it was completed or closed first (a retry of
        this very request returns True)."""

    def hooks_for_run(self, run_id: str) -> list[HookRecord]:
        """A run's hooks in op order."""

    def close_hooks(self, run_id: str) -> int:
        """Close every pending hook of an ended run; return how many."""


class SignalStore(Protocol):
    """Signals, kept in send order per (run, name)."""

    def put_signal(self, run_id: str, name: str, payload: str, *, wake: str | None = None) -> SignalRecord | None:
        """Store a signal under ``run_id`` after every earlier one of its name and wake run
        ``wake`` (default ``run_id``; a chain's signals are kept under its anchor and wake its
        current run), in one transaction; None (nothing stored) if the run to wake has ended or
        does not exist, or if another signal ordered after this one was stored meanwhile (the
        caller sends again). "After" does not trust the sender's clock: the key's number is
        :func:`~workflows.core.storage.rules.signal_time` of the anchor's ``signal_clock`` (one consistent
        read), which the transaction advances. A retry of this very request writes the same item:
        harmless."""

    def delete_signals(self, run_id: str, keys: list[str]) -> None:
        """Delete signals of ``run_id`` by key (taken ones, before a continue-as-new); missing
        ones are fine. Unconditional, in batches (25 keys a request)."""

    def signals(self, run_id: str, name: str) -> list[SignalRecord]:
        """The signals of ``name`` sent to a run, oldest first."""

    def stored_signals(self, run_id: str) -> list[SignalRecord]:
        """Every signal and update request stored under a run (a chain's anchor), in key order:
        the waiting ones and the signals its runs took (``core.ops.inbox``)."""


class JoinStore(Protocol):
    """Fan-in joins: branch results and idempotent counters."""

    def record_branch(self, join_id: str, index: int, data: str | None, error: str | None) -> bool:
        """Record branch ``index``'s outcome once; False if it was recorded already."""

    def join_branch(self, join_id: str, index: int, total: int) -> bool:
        """Count branch ``index`` of ``total`` (idempotently); True when the join is complete."""

    def tally_branch(self, join_id: str, index: int, failed: bool) -> tuple[set[int], set[int]]:
        """Add branch ``index`` to the succeeded (or failed) set of a fan-out with completion
        criteria, once; return the sets of succeeded and failed branches after."""

    def read_tally(self, join_id: str) -> tuple[set[int], set[int]]:
        """The succeeded and failed sets of a fan-out with completion criteria (empty if none is
        tallied yet), read consistently."""

    def branch_results(self, join_id: str, total: int | None = None) -> list[BranchRecord]:
        """Every recorded branch outcome, in index order. ``total`` (the join's width) reads every
        counter shard; without it, shards are read in order while each is full, which finds
        every outcome of a complete join (see ``core.model.join_layout``)."""

    def get_branch(self, join_id: str, index: int) -> BranchRecord | None:
        """Branch ``index``'s recorded outcome, or None."""

    def settle_join(self, join_id: str, total: int) -> tuple[list[BranchRecord], bool]:
        """Count (idempotently, as ``join_branch``) every recorded branch not yet counted;
        return every recorded outcome in index order and whether the join is complete."""


class TagStore(Protocol):
    """Run tags and their index items (one per tag and run, keyed ``key=value``)."""

    def set_tags(self, event: EventRecord, run: RunRecord, before: dict[str, str], after: dict[str, str]) -> bool:
        """Record op outcome ``event`` (write-once), set the run's tags to ``after`` and move its
        index items from ``before``, in one transaction, only while the run is live. False
        (nothing written) if the op has an outcome already or the run has ended; a retry of this
        very request (its response lost) returns True."""

    def tag_ended_run(self, run: RunRecord, after: dict[str, str]) -> bool:
        """Set an ended run's tags (and their index items, with the run's TTL) in one transaction,
        only while it is ended with the tags read; False if it changed meanwhile."""


class EventStore(Protocol):
    """Events and progress streams (``core.ops.events``): items in the run's history partition."""

    def set_event(self, event: EventRecord, latest: EventRecord) -> bool:
        """Record op outcome ``event`` (write-once) and put ``latest``, the key's latest value, in
        one transaction, only while the run is live. False (nothing written) if the slot is taken
        or the run has ended (also when an earlier send of this request applied, its response lost:
        the caller then reads the outcome at the op's position)."""

    def write_stream(self, event: EventRecord, entry: EventRecord) -> bool:
        """Record op outcome ``event`` and put stream ``entry`` (both write-once), in one transaction,
        only while the run is live; False (nothing written) otherwise, as :meth:`set_event`."""


class UpdateStore(Protocol):
    """Updates (``core.replay.updates``): requests in the signals table, answers in the run's history partition."""

    def put_update(self, request: SignalRecord, wake: str) -> bool:
        """Store ``request`` (write-once by key) under its chain's anchor, numbered after everything
        stored there before (the anchor's ``signal_clock``), and wake run ``wake``, in one transaction
        while that run is live; False (nothing written) if the request is stored already or the run
        ended. Raises RunNotFound if the anchor has no run item."""

    def answer_update(self, record: EventRecord, answer: EventRecord, request: SignalRecord, *,
                      owner: str | None = None) -> bool:
        """Record the update op ``record`` and its ``answer`` (both write-once) and delete ``request``,
        in one transaction while the run is live, its position free (the cursor before it, or a
        suspended wait at it) and no other resume than ``owner`` holds a live claim; False (nothing
        written) otherwise."""

    def refuse_update(self, answer: EventRecord, request: SignalRecord) -> bool:
        """Put the refusal ``answer`` (write-once) and delete ``request``, in one transaction while
        the run is live; False (nothing written) otherwise."""


class RetentionStore(Protocol):
    """Expiry of ended runs: the TTL attribute ``retain_until`` (epoch seconds) on their items."""

    def runs_to_retain(self, ended_before: float, limit: int = 100) -> list[str]:
        """Ended runs whose items are not stamped yet and that ended before ``ended_before`` (a
        sparse sharded index the end writes; a fair share from every shard), at most ``limit``."""

    def retain_run(self, run_id: str) -> bool:
        """Stamp every item of an ended run (history, its fan-outs' joins and branch attempts,
        hooks, signals, tag index items, its idempotency guard unless it continued) with the
        run's ``retain_until``, then take it out of the retention index. The last run of a
        continue-as-new chain gives its anchor (``chain_head``) the same ``retain_until`` and
        puts it in the index (condition: it exists and has no ``retain_until`` yet), so the
        anchor's items expire with the chain. Idempotent; never creates an item but a closed
        join's; leaves an item whose TTL is already at least the run's; False if the run is live,
        unknown or not in the index."""

    def keep_run_alive(self, run_id: str, kept_before: float, until: int) -> bool:
        """Push the TTL of a live run's history, join and signal items (those written with one,
        expiring before ``until``) out to ``until``, then set its ``stamped_at``, if it was last
        kept alive (or created) before ``kept_before``; and the same for the first run of its
        continue-as-new chain (ended ``continued``, no TTL while the chain lives). Never moves a
        TTL in; never creates an item. Whether it renewed either."""


class ScheduleStore(Protocol):
    """Schedules, their due index, fire claims and running-run bookkeeping."""

    def create_schedule(self, record: ScheduleRecord) -> ScheduleRecord:
        """Store a new schedule. Raises ScheduleAlreadyExists."""

    def get_schedule(self, schedule_id: str) -> ScheduleRecord:
        """A schedule. Raises ScheduleNotFound."""

    def find_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        """A schedule, or None."""

    def get_schedules(self, schedule_ids: list[str]) -> list[ScheduleRecord]:
        """The schedules that exist among ``schedule_ids``, in that order."""

    def list_schedules(self, *, workflow: str | None = None, state: str | None = None, limit: int = 50,
                       cursor: str | None = None) -> Page[ScheduleRecord]:
        """One page of schedules sorted by id."""

    def update_schedule(self, schedule_id: str, seen_revision: int, changes: dict[str, Any], *,
                        reschedule: tuple[float | None, float | None] | None, active: bool,
                        seen_pending: bool) -> bool:
        """Change a definition if still at revision ``seen_revision`` (optimistic: every change
        adds 1 to ``ScheduleRecord.revision``)."""

    def pause_schedule(self, schedule_id: str) -> ScheduleRecord:
        """Pause (leave the due index). Raises ScheduleNotFound."""

    def unpause_schedule(self, schedule_id: str, *, next_fire: float | None, next_due: float | None,
                         seen_pending: bool) -> ScheduleRecord | None:
        """Make a paused schedule active again; None if its state changed since read."""

    def delete_schedule(self, schedule_id: str) -> bool:
        """Delete; False if there was none."""

    def due_schedules(self, now: float | None = None, limit: int = 500,
                      page_size: int | None = None) -> list[ScheduleRecord]:
        """Schedules due at ``now`` (the sharded due index), at most ``limit``, a fair
        share from every shard."""

    def claim_fire(self, schedule_id: str, fire: float, run_id: str, *, lease_until: float,
                   advance: Advance | None = None, when_idle: bool = False) -> ScheduleRecord | None:
        """Claim a fire (one beat wins); None if the condition failed."""

    def skip_fire(self, schedule_id: str, advance: Advance, *, when_running: bool = True) -> ScheduleRecord | None:
        """Skip a scheduled fire while a run is running."""

    def buffer_fire(self, schedule_id: str, fire: float, *, advance: Advance | None = None,
                    replace: bool | None = None, only_first: bool = False) -> ScheduleRecord | None:
        """Buffer a fire to start when the running run ends."""

    def promote_buffered(self, schedule_id: str, fire: float, run_id: str, *,
                         lease_until: float) -> ScheduleRecord | None:
        """Start a buffered fire if nothing runs."""

    def renew_claim(self, schedule_id: str, fire: float, seen_due: float, lease_until: float) -> bool:
        """Take over an open claim whose lease passed."""

    def finish_fire(self, schedule_id: str, fire: float, error: str | None = None) -> ScheduleRecord | None:
        """Close the claim of ``fire``; None if it was not open."""

    def recheck_schedule(self, schedule_id: str, *, keep: bool) -> ScheduleRecord | None:
        """A schedule with no fire left stays in the due index, due again after a short
        lease, while runs of it run or wait in its buffer (so a buffered fire never waits
        on a run-end listener that was lost); ``keep=False`` takes it out. Condition: no
        open claim and no fire to come. None if the condition failed."""

    def release_fire(self, schedule_id: str, fire: float) -> ScheduleRecord | None:
        """Take an ended fire out of ``running`` (idempotent)."""

    def advance_chain(self, schedule_id: str, fire: float, run_id: str) -> bool:
        """Record the latest run of a fire's continue-as-new chain."""


class FlowStore(Protocol):
    """Flow control shared by the fleet: concurrency slots and rate buckets (see docs/flow-control.md).

    A limit is named by a string (``limit``, e.g. ``step:charge#cust-1``). A concurrency limit of
    ``capacity`` has slots 0..capacity-1; a slot is held by one ``holder`` until it releases it
    or its lease passes (then anyone may take it: a dead holder's slot is reclaimed). Every item
    of a limit is found by its **slot number** (its sort key): a concurrency slot's index, a
    waiter's place in a waiting list, a debounce window's 0.
    """

    def acquire_slot(self, limit: str, capacity: int, holder: str, lease_until: float, *,
                     token: str | None = None) -> int | None:
        """Take a free (or expired) slot of ``limit`` for ``holder`` until ``lease_until``; return its
        index, or None when every slot is held, or when ``holder`` already holds a live one (a
        second copy of one attempt never runs beside the first). One Query of the limit's slots,
        then a conditional write (``no holder OR lease passed``) per slot tried; a retry of this
        very request (its response lost) is recognised by a request id and wins. The request id
        is ``token`` if given (unique to this taking): renewals and the release that pass it
        touch this taking only, not a later taking of the slot by the same holder (a second copy
        of the attempt that took it after this one's lease passed)."""

    def renew_slot(self, limit: str, number: int, holder: str, lease_until: float, *,
                   token: str | None = None) -> bool:
        """Extend ``holder``'s lease on slot ``number`` (its taking ``token``, if given); False if the holder
        lost it (reclaimed)."""

    def release_slot(self, limit: str, number: int, holder: str, *, token: str | None = None) -> bool:
        """Free the item at slot ``number`` that ``holder`` holds (a slot, a waiter's place, a
        window), conditional on the holder, and on its taking ``token`` if given; False if it
        no longer held it."""

    def slot_holders(self, limit: str) -> list[SlotRecord]:
        """The items of ``limit`` that are or were held, in slot-number order (one Query)."""

    def pass_slot(self, limit: str, number: int, holder: str, successor: str) -> bool:
        """Hand slot ``number``, which ``holder`` holds, to ``successor``, lease kept (conditional on the holder);
        False if ``holder`` no longer held it. A retry of a pass that applied (``successor``
        holds the slot) is True."""

    def enqueue_waiter(self, queue: str, place: int, holder: str) -> int:
        """Put ``holder`` in the waiting list ``queue`` (items read back in place order by
        ``slot_holders``, taken out by ``release_slot``) at ``place``, or at the first place after
        it that no other holder has; return the place it holds. Conditional (the place is free or
        already ``holder``'s), so a repeated or retried request keeps the one place."""

    def push_debounce(self, window: str, run_id: str, args: str, ends: float) -> bool:
        """Collapse a start into the open debounce ``window`` of ``run_id``: set the run's
        arguments to ``args`` and the window's end (the expiry of its item, slot number 0) to
        ``ends``, in one transaction. Condition: the item of ``window`` is held by ``run_id`` and has not expired,
        and the run exists. False: nothing written. Raises PayloadTooLarge for arguments over
        ``inline_payload_bytes``."""

    def take_token(self, bucket: str, rate: float, burst: float, holder: str) -> float:
        """Take one token for ``holder`` from a token bucket refilled at ``rate`` per second up to
        ``burst``: 0.0 if taken now, else the seconds until the token reserved for ``holder`` is
        due. A reservation debits the bucket (it may go below zero: a queue of waiters, each with
        its own due time, in the order they came) and is stored beside it in one transaction; a
        holder that comes back finds its reservation and takes it once due, without touching
        the bucket. Every bucket write is conditional on the request id it was read with, so two
        takers never spend one token."""


class SessionStore(Protocol):
    """The dashboard's signed-out sessions, shared by every web process (see docs/dashboard.md).

    A session is named by the SHA-256 of its id; signing out writes one item that DynamoDB's TTL
    removes at the session's expiry, and every request with a session cookie reads it.
    """

    def end_session(self, session_hash: str, until: float) -> None:
        """Mark the session signed out until ``until`` (epoch seconds: its expiry)."""

    def session_ended(self, session_hash: str) -> bool:
        """Whether the session was signed out (a consistent read)."""


class BatchStore(Protocol):
    """Batch operations (``core/model/batches.py``): one item per batch, every write conditioned on its
    revision, so two drivers never both advance it. A write whose response was lost and was sent
    again reports what the first send did (its request id is on the item)."""

    def create_batch(self, batch: BatchRecord) -> None:
        """Store a new live batch."""

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        """A batch, live or ended, or None."""

    def live_batches(self) -> list[BatchRecord]:
        """Every live batch (one Query)."""

    def newest_batches(self, limit: int, before: str | None = None) -> list[BatchRecord]:
        """Up to ``limit`` batches, live and ended, newest first (ids before ``before``, if given),
        in at most 2 requests whatever the number kept."""

    def claim_batch(self, batch: BatchRecord, owner: str, lease_until: float) -> BatchRecord | None:
        """Take a live batch at the version read whose ``due_at`` has come, for ``owner`` until
        ``lease_until``; None if it moved meanwhile."""

    def advance_batch(self, batch: BatchRecord, cursor: str | None, progress: Progress,
                      due_at: float) -> BatchRecord | None:
        """Record a chunk at the version read (cursor, counts, next chunk time; no owner after);
        None if it moved meanwhile."""

    def end_batch(self, batch: BatchRecord, state: str, progress: Progress = ...) -> BatchRecord | None:
        """End a live batch at the version read (moved to the ended partition with its TTL);
        None if it moved meanwhile."""

    def stall_batch(self, batch: BatchRecord, error: str, due_at: float) -> BatchRecord | None:
        """Record a chunk of its owner that failed for the store: ``stalls`` + 1, ``stalled`` set to
        ``error``, ``due_at`` set, the owner let go, at the revision read (+1). The batch after, or None
        if it moved meanwhile."""


class Store(RunStore, HistoryStore, TimerStore, HookStore, SignalStore, JoinStore, TagStore, RetentionStore,
            ScheduleStore, FlowStore, SessionStore, EventStore, BatchStore, UpdateStore, Protocol):
    """Everything the engine, the client and beat store."""
