"""PynamoDB models of every piece of workflow state.

Table names carry the deployment's prefix, so the model classes are built per
settings by :func:`build_models`. Nothing outside ``persistence`` imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, IncludeProjection, KeysOnlyProjection
from pynamodb.models import Model

from workflows.settings import Settings


@dataclass(frozen=True)
class Models:
    """The model classes of one deployment (one table prefix)."""

    Run: Any
    Event: Any
    Hook: Any
    Timer: Any
    Schedule: Any
    Join: Any
    Signal: Any
    Guard: Any
    Tag: Any
    Flow: Any
    Batch: Any

    def all(self) -> list[Any]:
        """Return every model class, in creation order."""
        return [self.Run, self.Event, self.Hook, self.Timer, self.Schedule, self.Join, self.Signal, self.Guard,
                self.Tag, self.Flow, self.Batch]


def build_models(settings: Settings) -> Models:  # noqa: C901 - one class per table
    """Build the model classes bound to ``settings`` (prefix, region, endpoint)."""
    prefix, region, host = settings.table_prefix, settings.region, settings.dynamodb_endpoint

    class BaseMeta:
        billing_mode = "PAY_PER_REQUEST"

    def meta(name: str) -> Any:
        return type("Meta", (BaseMeta,), {"table_name": prefix + name, "region": region, "host": host,
                                          "max_retry_attempts": 8, "base_backoff_ms": 25})

    def index_meta(name: str, projection: Any) -> type:
        return type("Meta", (), {"index_name": name, "projection": projection})

    summary = IncludeProjection(["status", "workflow", "parent_run_id", "schedule_id", "ended_at"])

    class RunsByStatus(GlobalSecondaryIndex):  # type: ignore[type-arg]
        """Runs by status, newest first: key ``<status>#<k>``, k of WORKFLOWS_INDEX_SHARDS
        (see core.storage.listing)."""

        Meta = index_meta("by_status", summary)
        status_shard = UnicodeAttribute(hash_key=True)
        created_at = NumberAttribute(range_key=True)

    class RunsByWorkflow(GlobalSecondaryIndex):  # type: ignore[type-arg]
        """Runs by workflow, newest first: key ``<workflow>#<k>``."""

        Meta = index_meta("by_workflow", summary)
        workflow_shard = UnicodeAttribute(hash_key=True)
        created_at = NumberAttribute(range_key=True)

    class RunsByLease(GlobalSecondaryIndex):  # type: ignore[type-arg]
        Meta = index_meta("by_lease", KeysOnlyProjection())
        lease_shard = UnicodeAttribute(hash_key=True)
        lease_expires_at = NumberAttribute(range_key=True)

    class RunsByRetention(GlobalSecondaryIndex):  # type: ignore[type-arg]
        """Sparse: ended runs whose items are not yet stamped with their TTL (see core.storage.retention)."""

        Meta = index_meta("by_retention", KeysOnlyProjection())
        retain_shard = UnicodeAttribute(hash_key=True)
        ended_at = NumberAttribute(range_key=True)

    class Run(Model):
        Meta = meta("runs")
        run_id = UnicodeAttribute(hash_key=True)
        workflow = UnicodeAttribute()
        status = UnicodeAttribute()
        status_shard = UnicodeAttribute(null=True)  # <status>#<k>: the by_status key, set with every status
        workflow_shard = UnicodeAttribute(null=True)  # <workflow>#<k>: the by_workflow key
        created_at = NumberAttribute()
        updated_at = NumberAttribute()
        ended_at = NumberAttribute(null=True)
        args = UnicodeAttribute()
        result = UnicodeAttribute(null=True)
        result_in_history = BooleanAttribute(null=True)  # the result is the history record RUN_RESULT_SEQ
        error = UnicodeAttribute(null=True)
        cursor = NumberAttribute(default=-1)
        waiting = UnicodeAttribute(null=True)
        wake_seq = NumberAttribute(default=0)
        lease_shard = UnicodeAttribute(null=True)
        lease_expires_at = NumberAttribute(null=True)
        recoveries = NumberAttribute(default=0)
        recovery_pending = NumberAttribute(null=True)  # recoveries sent, not yet taken (see core.storage.recovery)
        recovery_taken_at = NumberAttribute(null=True)  # the cursor at which a worker last took one
        recovery_faults = NumberAttribute(null=True)  # recoveries counted towards the cap
        cancel_requested = BooleanAttribute(default=False)
        deadline = NumberAttribute(null=True)
        idempotency_key = UnicodeAttribute(null=True)
        parent_run_id = UnicodeAttribute(null=True)
        parent_pos = NumberAttribute(null=True)
        continued_from = UnicodeAttribute(null=True)
        continued_to = UnicodeAttribute(null=True)
        schedule_id = UnicodeAttribute(null=True)
        fire_time = NumberAttribute(null=True)
        code_version = UnicodeAttribute(null=True)
        forked_from = UnicodeAttribute(null=True)
        forked_at = NumberAttribute(null=True)
        chain_head = UnicodeAttribute(null=True)  # continue-as-new: the chain's anchor (see core.storage.chains)
        chain_last = UnicodeAttribute(null=True)  # on an anchor: the chain's latest run
        signal_clock = NumberAttribute(null=True)  # on an anchor: the number of its last stored signal's key
        queue = UnicodeAttribute(null=True)
        priority = UnicodeAttribute(null=True)  # the run's level, None for normal (see core.model.priority)
        req = UnicodeAttribute(null=True)  # id of the last request that decided something (see base.new_request)
        owner = UnicodeAttribute(null=True)  # the resume running inline steps (see claim_run)
        sent = NumberAttribute(null=True)  # the last op marked in flight for a message (see advance_run, claim_run)
        update_pos = NumberAttribute(null=True)  # the last recorded update's position (see answer_update, claim_run)
        last_outcome = UnicodeAttribute(null=True)  # the last op's outcome, written by the end (see finish_run)
        ddb_reads = NumberAttribute(null=True)  # requests counted for the run (see core.storage.metering)
        ddb_writes = NumberAttribute(null=True)
        sqs_sends = NumberAttribute(null=True)
        tags = UnicodeAttribute(null=True)  # JSON object of the run's tags (see core.storage.tags)
        retain_shard = UnicodeAttribute(null=True)  # ended, items not yet stamped (the by_retention index)
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute: set when the run ends
        stamped_at = NumberAttribute(null=True)  # when its items' TTL was last pushed out (core.storage.retention)
        start_at = NumberAttribute(null=True)  # a delayed run's start time (see core.admission.delayed)
        # JSON: the last deferral to a worker that serves it (core.admission.deferral)
        deferral = UnicodeAttribute(null=True)
        by_status = RunsByStatus()
        by_workflow = RunsByWorkflow()
        by_lease = RunsByLease()
        by_retention = RunsByRetention()

    class Event(Model):
        """One history record, written once: its key is derived from the op position."""

        Meta = meta("history")
        run_id = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)
        kind = UnicodeAttribute()
        name = UnicodeAttribute(null=True)
        pos = NumberAttribute(null=True)
        status = UnicodeAttribute()
        at = NumberAttribute()
        data = UnicodeAttribute(null=True)
        error = UnicodeAttribute(null=True)
        attempt = NumberAttribute(null=True)
        started_at = NumberAttribute(null=True)
        next_waiting = UnicodeAttribute(null=True)  # a sent step's record that dispatched the next op
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute
        req = UnicodeAttribute(null=True)

    class HooksByRun(GlobalSecondaryIndex):  # type: ignore[type-arg]
        Meta = index_meta("by_run", IncludeProjection(["name", "status", "expires_at", "created_at"]))
        run_id = UnicodeAttribute(hash_key=True)
        pos = NumberAttribute(range_key=True)

    class Hook(Model):
        Meta = meta("hooks")
        token_hash = UnicodeAttribute(hash_key=True)
        run_id = UnicodeAttribute()
        pos = NumberAttribute()
        name = UnicodeAttribute()
        status = UnicodeAttribute()
        created_at = NumberAttribute()
        expires_at = NumberAttribute(null=True)
        schema = UnicodeAttribute(null=True)
        payload = UnicodeAttribute(null=True)
        completed_at = NumberAttribute(null=True, attr_name="resumed_at")  # stored under its old name
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute
        req = UnicodeAttribute(null=True)
        by_run = HooksByRun()

    class TimersByDue(GlobalSecondaryIndex):  # type: ignore[type-arg]
        Meta = index_meta("by_due", AllProjection())
        shard = UnicodeAttribute(hash_key=True)
        due_at = NumberAttribute(range_key=True)

    class Timer(Model):
        Meta = meta("timers")
        timer_id = UnicodeAttribute(hash_key=True)
        shard = UnicodeAttribute()
        due_at = NumberAttribute()
        kind = UnicodeAttribute()
        run_id = UnicodeAttribute()
        pos = NumberAttribute(null=True)
        data = UnicodeAttribute(null=True)
        # new on every write (stored as ``version``): a fired timer deletes only its own write
        write_id = UnicodeAttribute(null=True, attr_name="version")
        claimed_at = NumberAttribute(null=True)  # a sweep took its firing (retry timers), for a lease
        req = UnicodeAttribute(null=True)  # the request id of that claim
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute (never set on this table's items)
        by_due = TimersByDue()

    class SchedulesByDue(GlobalSecondaryIndex):  # type: ignore[type-arg]
        """Sparse: only active schedules with a fire to come (or a start to finish) are in it."""

        Meta = index_meta("by_due", KeysOnlyProjection())
        active_shard = UnicodeAttribute(hash_key=True)
        due_at = NumberAttribute(range_key=True)

    class SchedulesById(GlobalSecondaryIndex):  # type: ignore[type-arg]
        """Every schedule, sorted by id, for listings (written on create, delete, pause, unpause)."""

        Meta = index_meta("by_id", IncludeProjection(["workflow", "state"]))
        kind = UnicodeAttribute(hash_key=True)
        schedule_id = UnicodeAttribute(range_key=True)

    class Schedule(Model):
        """A schedule and its bookkeeping; fire times are epoch seconds."""

        Meta = meta("schedules")
        schedule_id = UnicodeAttribute(hash_key=True)
        kind = UnicodeAttribute(default="schedule")
        workflow = UnicodeAttribute()
        spec = UnicodeAttribute()
        state = UnicodeAttribute()
        overlap = UnicodeAttribute()
        catchup_window = NumberAttribute(null=True)
        args = UnicodeAttribute()
        next_fire_at = NumberAttribute(null=True)  # nominal time of the next fire
        next_due_at = NumberAttribute(null=True)  # next_fire_at plus its jitter
        due_at = NumberAttribute(null=True)  # next_due_at, or a claim's lease while ``pending``
        active_shard = UnicodeAttribute(null=True)
        pending = NumberAttribute(null=True)  # fire claimed, its run not yet known to exist
        running = NumberSetAttribute(null=True)  # type: ignore[var-annotated]
        buffered = NumberSetAttribute(null=True)  # type: ignore[var-annotated]
        heads = MapAttribute(null=True)  # type: ignore[var-annotated]  # fire key -> last run of a continued chain
        last_fire_at = NumberAttribute(null=True)
        last_run_id = UnicodeAttribute(null=True)
        fired = NumberAttribute(default=0)
        skipped = NumberAttribute(default=0)
        last_error = UnicodeAttribute(null=True)
        created_at = NumberAttribute()
        updated_at = NumberAttribute()
        declared = BooleanAttribute(default=False)
        revision = NumberAttribute(default=0, attr_name="version")  # +1 on every change (optimistic writes)
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute (never set on this table's items)
        by_due = SchedulesByDue()
        by_id = SchedulesById()

    class Join(Model):
        """A join's entries: branch results (entry >= 0) and counters (entry < 0): counter shard s
        and its branches' results in partition ``<join id>#<s>``, the root counter in ``<join id>``.
        The entry is stored as ``slot`` (the glossary keeps "slot" for flow control)."""

        Meta = meta("joins")
        join_id = UnicodeAttribute(hash_key=True)
        entry = NumberAttribute(range_key=True, attr_name="slot")
        data = UnicodeAttribute(null=True)
        error = UnicodeAttribute(null=True)
        total = NumberAttribute(null=True)
        done = NumberSetAttribute(null=True)  # type: ignore[var-annotated]
        # the tally of a fan-out with completion criteria (slot 0 of the root partition): branches by outcome
        ok = NumberSetAttribute(null=True)  # type: ignore[var-annotated]
        failed = NumberSetAttribute(null=True)  # type: ignore[var-annotated]
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute

    class Signal(Model):
        Meta = meta("signals")
        run_id = UnicodeAttribute(hash_key=True)
        signal_key = UnicodeAttribute(range_key=True)
        name = UnicodeAttribute()
        payload = UnicodeAttribute(null=True)
        sent_at = NumberAttribute()
        order_number = NumberAttribute(null=True)  # an update request's place among the chain's requests
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute

    class Guard(Model):
        """An idempotency key, written in the same transaction as its run."""

        Meta = meta("idempotency")
        key = UnicodeAttribute(hash_key=True)
        run_id = UnicodeAttribute()
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute
        created_at = NumberAttribute()

    class Tag(Model):
        """The index item of one tag of one run: Queried by ``key=value`` in each shard, newest first."""

        Meta = meta("tags")
        tag = UnicodeAttribute(hash_key=True)  # key=value#<shard> (core.storage.tags.index_key)
        run_key = UnicodeAttribute(range_key=True)  # creation time (fixed width) # run id
        run_id = UnicodeAttribute()
        workflow = UnicodeAttribute()
        created_at = NumberAttribute()
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute


    class Flow(Model):
        """Flow control, by slot number (the sort key, stored as ``slot``): concurrency slots (number
        >= 0) and a rate bucket (number -1) per limit, token reservations (< -1), a waiting list's
        waiters (number: the run's creation time in microseconds) and a debounce window (number 0)."""

        Meta = meta("flow")
        limit_id = UnicodeAttribute(hash_key=True)
        number = NumberAttribute(range_key=True, attr_name="slot")
        holder = UnicodeAttribute(null=True)
        expires_at = NumberAttribute(null=True)
        tokens = NumberAttribute(null=True)
        at = NumberAttribute(null=True)
        req = UnicodeAttribute(null=True)
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute: a token reservation nobody took

    class Batch(Model):
        """A batch operation (``core/model/batches.py``): live ones in partition ``live`` (what beat
        Queries), ended ones in ``ended``; every write conditioned on ``version``."""

        Meta = meta("batches")
        part = UnicodeAttribute(hash_key=True)  # "live" or "ended"
        batch_id = UnicodeAttribute(range_key=True)  # sorts by creation time
        operation = UnicodeAttribute()
        selection = UnicodeAttribute()  # the filter, JSON
        params = UnicodeAttribute(null=True)  # the operation's parameters, JSON
        rate = NumberAttribute()
        state = UnicodeAttribute()
        cursor = UnicodeAttribute(null=True)  # the listing cursor of the next page
        selected = NumberAttribute(default=0)
        done = NumberAttribute(default=0)
        failed = NumberAttribute(default=0)
        skipped = NumberAttribute(default=0)
        errors = UnicodeAttribute(null=True)  # the latest failures, JSON
        created_at = NumberAttribute()
        updated_at = NumberAttribute(null=True)
        ended_at = NumberAttribute(null=True)
        due_at = NumberAttribute(null=True)  # the next chunk's time, or the driver's lease
        owner = UnicodeAttribute(null=True)
        revision = NumberAttribute(default=0, attr_name="version")  # +1 on every write (optimistic writes)
        req = UnicodeAttribute(null=True)
        run_seconds = NumberAttribute(null=True)  # the last chunk's seconds per run (sizes a budgeted chunk)
        stalls = NumberAttribute(null=True)  # chunks in a row that failed for the store
        stalled = UnicodeAttribute(null=True)  # the last such chunk's error
        retain_until = TTLAttribute(null=True)  # the table's TTL attribute: set when the batch ends

    return Models(Run, Event, Hook, Timer, Schedule, Join, Signal, Guard, Tag, Flow, Batch)
