"""Schedules: start a workflow on a cron timetable or every N seconds.

See docs/schedules.md. Beat fires them (``workflows beat``); these functions
define, inspect and steer them, and can fire them by hand.
"""

from __future__ import annotations

import re
import reprlib
import time
import uuid
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, TypedDict

from beat.cron import ScheduleSpec, fire_times_between

from . import codec
from .client import RunHandle
from .core.model.records import Page, ScheduleRecord
from .core.model.registry import get_workflow
from .core.model.states import ScheduleState
from .durations import Duration, to_seconds
from .errors import InvalidDuration, InvalidSchedule, ScheduleNotFound, SerializationError
from .options import SchedulePolicy, Timetable, bundle, unknown_keywords
from .runtime import get_engine

if TYPE_CHECKING:
    from typing_extensions import Unpack

OVERLAP_POLICIES = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")
MAX_BACKFILL = 1000
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,199}$")


@dataclass(frozen=True)
class ScheduleInfo:
    """A schedule as stored; times are aware UTC datetimes.

    Attributes:
        schedule_id: the schedule's id.
        workflow: the registered name of the workflow it starts.
        state: ``"active"`` or ``"paused"``.
        cron / every: the timetable: a cron expression, or an interval in seconds.
        timezone: IANA time zone the cron expression is read in.
        start_at / end_at: first and last instants a fire may happen, if set.
        jitter: upper bound of the random delay of each fire, seconds.
        overlap: what a fire does while a run of the schedule is running.
        catchup_window: how late a fire may start after downtime (None: only the latest missed fire).
        args / kwargs: the arguments each run gets.
        next_fire_at: the next fire time, or None when no fire is left.
        last_fire_at / last_run_id: the latest fire of the timetable, and the latest run started.
        running: fire times whose runs are running (a continue-as-new chain counts once).
        buffered: fire times waiting for the running run to end.
        fired / skipped: how many fires started a run, and how many were skipped.
        last_error: why the latest fire could not start, if it could not.
        declared: created from ``@workflow(schedule=...)``.
    """

    schedule_id: str
    workflow: str
    state: str
    cron: str | None
    every: float | None
    timezone: str
    start_at: datetime | None
    end_at: datetime | None
    jitter: float
    overlap: str
    catchup_window: float | None
    args: list[Any]
    kwargs: dict[str, Any]
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    last_run_id: str | None
    running: list[datetime]
    buffered: list[datetime]
    fired: int
    skipped: int
    last_error: str | None
    declared: bool
    created_at: datetime
    updated_at: datetime

    @property
    def paused(self) -> bool:
        """Whether the schedule is paused."""
        return self.state == ScheduleState.PAUSED


def _when(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc)


def schedule_info(record: ScheduleRecord) -> ScheduleInfo:
    """The public view of a stored schedule."""
    spec = ScheduleSpec.from_dict(record.spec)
    args, kwargs = codec.loads(record.args)
    return ScheduleInfo(
        schedule_id=record.schedule_id, workflow=record.workflow, state=record.state, cron=spec.cron,
        every=spec.every, timezone=spec.timezone, start_at=spec.start_at, end_at=spec.end_at, jitter=spec.jitter,
        overlap=record.overlap, catchup_window=record.catchup_window, args=list(args), kwargs=dict(kwargs),
        next_fire_at=_when(record.next_fire_at), last_fire_at=_when(record.last_fire_at),
        last_run_id=record.last_run_id, running=[_when(f) for f in record.running],  # type: ignore[misc]
        buffered=[_when(f) for f in record.buffered], fired=record.fired,  # type: ignore[misc]
        skipped=record.skipped, last_error=record.last_error, declared=record.declared,
        created_at=_when(record.created_at), updated_at=_when(record.updated_at),  # type: ignore[arg-type]
    )


def _workflow_name(workflow: Any) -> str:
    name = workflow if isinstance(workflow, str) else getattr(workflow, "name", None)
    if not isinstance(name, str) or not name:
        raise InvalidSchedule(f"workflow must be a registered name or a workflow object, got {workflow!r}")
    return get_workflow(name).name


def _check_id(schedule_id: Any) -> str:
    if not isinstance(schedule_id, str) or not _ID.match(schedule_id):
        raise InvalidSchedule(f"invalid schedule id {schedule_id!r}: 1-200 characters of letters, digits and "
                              "._:@/+=- starting with a letter or digit")
    return schedule_id


def _check_overlap(overlap: Any) -> str:
    if overlap not in OVERLAP_POLICIES:
        raise InvalidSchedule(f"invalid overlap policy {overlap!r}: one of {', '.join(OVERLAP_POLICIES)}")
    return str(overlap)


def _check_window(window: Duration | None) -> float | None:
    if window is None:
        return None
    try:
        return to_seconds(window, what="catchup_window", allow_zero=False)
    except InvalidDuration as exc:
        raise InvalidSchedule(f"invalid catchup_window {window!r}: {exc}") from exc


def _encode_args(name: str, args: Any, kwargs: Any) -> str:
    if not isinstance(args, (list, tuple)):
        raise InvalidSchedule(f"args must be a list or tuple, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise InvalidSchedule(f"kwargs must be a dict, got {type(kwargs).__name__}")
    return codec.dumps([list(args), kwargs or {}], what=f"arguments of schedule of {name!r}",
                       limit=get_engine().settings.inline_payload_bytes)  # kept inline: a schedule outlives objects


def _first_fire(spec: ScheduleSpec, schedule_id: str, now: float) -> tuple[float | None, float | None]:
    from workflows.core.background.firing import next_after

    return next_after(spec, schedule_id, now)


class _TimetableAndPolicy(TypedDict, total=False):
    """The fields of a :class:`Timetable` and of a :class:`SchedulePolicy` (but ``paused``)."""

    cron: str | None
    every: Duration | None
    timezone: str
    start_at: datetime | None
    end_at: datetime | None
    jitter: Duration | None
    overlap: str
    catchup_window: Duration | None


class ScheduleKeywords(_TimetableAndPolicy, total=False):
    """The simple keywords of :func:`create_schedule`: the fields of a :class:`Timetable` and of a
    :class:`SchedulePolicy`, each given alone."""

    paused: bool


TIMETABLE_KEYWORDS = frozenset(f.name for f in fields(Timetable))
POLICY_KEYWORDS = frozenset(f.name for f in fields(SchedulePolicy))


def schedule_options(timetable: Timetable | None, policy: SchedulePolicy | None,
                     keywords: dict[str, Any]) -> tuple[Timetable, SchedulePolicy]:
    """The timetable and policy of a :func:`create_schedule` call: the value objects, or ones built
    from the simple keywords.

    Raises:
        InvalidArguments: a keyword is no schedule option.
        InvalidSchedule: a value object is of the wrong kind, or comes with keywords it stands for.
    """
    unknown_keywords(keywords, TIMETABLE_KEYWORDS | POLICY_KEYWORDS, "create_schedule")
    return (bundle(Timetable, timetable, {k: v for k, v in keywords.items() if k in TIMETABLE_KEYWORDS},
                   "timetable", InvalidSchedule),
            bundle(SchedulePolicy, policy, {k: v for k, v in keywords.items() if k in POLICY_KEYWORDS},
                   "policy", InvalidSchedule))


def create_schedule(workflow: Any, *, args: list[Any] | tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
                    schedule_id: str | None = None, timetable: Timetable | None = None,
                    policy: SchedulePolicy | None = None, **options: Unpack[ScheduleKeywords]) -> ScheduleInfo:
    """Create a schedule that starts ``workflow`` on a cron timetable or every interval.

    The timetable and the policy are value objects (:class:`~workflows.options.Timetable`,
    :class:`~workflows.options.SchedulePolicy`), or their fields given as simple keywords::

        create_schedule(report, cron="0 9 * * 1-5", timezone="Europe/Paris", overlap="buffer_one")
        create_schedule(report, timetable=Timetable(every="1h"), policy=SchedulePolicy(catchup_window="1d"))

    Args:
        workflow: a registered name or the workflow object.
        args / kwargs: the arguments of every run (JSON data).
        schedule_id: defaults to ``<workflow>-<random>``.
        timetable: when it fires: ``cron`` (five fields or ``@daily`` ..., read in ``timezone``) or
            ``every`` (seconds, ``"5m"`` or a timedelta; fires at ``start_at + k * every``), with
            ``start_at`` / ``end_at`` (aware datetimes) bounding the fires.
        policy: how fires behave: ``overlap`` (``skip`` by default, ``buffer_one``, ``buffer_all``,
            ``cancel_other``, ``terminate_other`` or ``allow_all``: what a fire does while a run of
            the schedule is running), ``catchup_window`` (after downtime, start fires missed by at
            most this long; None starts only the latest missed fire), ``jitter`` (delay each fire by
            up to this much, the same delay on every beat), ``paused`` (create it paused).
        **options: the fields of ``timetable`` and ``policy`` as simple keywords
            (:class:`ScheduleKeywords`).

    Raises:
        InvalidSchedule: bad cron, time zone, interval, policy or id; a value object with one of the
            keywords it stands for.
        InvalidArguments: a keyword that is no schedule option.
        UnknownWorkflow: no workflow is registered under that name.
        ScheduleAlreadyExists: the id is taken.
    """
    timetable, policy = schedule_options(timetable, policy, dict(options))
    record = new_schedule_record(workflow, timetable, policy, args=args, kwargs=kwargs, schedule_id=schedule_id)
    return schedule_info(get_engine().store.create_schedule(record))


def new_schedule_record(workflow: Any, timetable: Timetable, policy: SchedulePolicy = SchedulePolicy(), *,
                        args: list[Any] | tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
                        schedule_id: str | None = None) -> ScheduleRecord:
    """Validate the options of :func:`create_schedule` and return the record to store."""
    if not isinstance(policy.paused, bool):
        raise InvalidSchedule(f"paused must be True or False, got {policy.paused!r}")
    name = _workflow_name(workflow)
    spec = _spec(timetable, policy.jitter)
    schedule_id = _check_id(schedule_id if schedule_id is not None else f"{name}-{uuid.uuid4().hex[:12]}")
    record = ScheduleRecord(schedule_id=schedule_id, workflow=name, spec=spec.to_dict(),
                            overlap=_check_overlap(policy.overlap), args=_encode_args(name, args, kwargs),
                            state="paused" if policy.paused else "active",
                            catchup_window=_check_window(policy.catchup_window))
    record.next_fire_at, record.next_due_at = _first_fire(spec, schedule_id, get_engine().now())
    return record


def _spec(timetable: Timetable, jitter: Duration | None) -> ScheduleSpec:
    return ScheduleSpec.build(cron=timetable.cron, every=timetable.every, timezone=timetable.timezone,
                              start_at=timetable.start_at, end_at=timetable.end_at, jitter=jitter)


def get_schedule(schedule_id: str) -> ScheduleInfo:
    """Return a schedule.

    Raises:
        ScheduleNotFound: no schedule has this id.
    """
    return schedule_info(get_engine().store.get_schedule(_lookup_id(schedule_id)))


def _lookup_id(schedule_id: Any) -> str:
    if not isinstance(schedule_id, str) or not schedule_id or len(schedule_id) > 200:
        raise ScheduleNotFound(str(schedule_id))
    return schedule_id


def list_schedules(workflow: Any = None, state: str | None = None, limit: int = 50,
                   cursor: str | None = None) -> Page[ScheduleInfo]:
    """One page of schedules sorted by id: iterable, with ``next_cursor`` (None on the last page).

    Raises:
        SerializationError: a filter, the limit or the cursor is invalid (naming which).
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise SerializationError(f"limit must be an int in 1..1000, got {limit!r}")
    if state is not None and state not in tuple(ScheduleState):
        raise SerializationError(f"state must be 'active' or 'paused', got {state!r}")
    name = None if workflow is None else (workflow if isinstance(workflow, str) else getattr(workflow, "name", None))
    if workflow is not None and (not isinstance(name, str) or not name):
        raise SerializationError(f"workflow must be a name or a workflow object, got {workflow!r}")
    if cursor is not None and not isinstance(cursor, str):
        raise SerializationError(f"invalid cursor {reprlib.repr(cursor)}: pass the next_cursor of an earlier page")
    page = get_engine().store.list_schedules(workflow=name, state=state, limit=limit, cursor=cursor)
    return Page([schedule_info(r) for r in page.items], page.next_cursor)


class ScheduleChanges(_TimetableAndPolicy, total=False):
    """What :func:`update_schedule` may change: the workflow, its arguments, the timetable's fields
    and the policy's (but ``paused``: see :func:`pause_schedule`)."""

    workflow: Any
    args: list[Any] | tuple[Any, ...]
    kwargs: dict[str, Any] | None


UPDATABLE = frozenset(ScheduleChanges.__annotations__)


def update_schedule(schedule_id: str, **changes: Unpack[ScheduleChanges]) -> ScheduleInfo:
    """Change some options of a schedule; a new timetable takes effect from now.

    Giving ``cron`` drops ``every`` and the other way round. Runs already running
    or buffered are not touched.

    Args:
        schedule_id: the schedule to change.
        **changes: the options to change (:class:`ScheduleChanges`): ``workflow``, ``args``,
            ``kwargs``, a :class:`~workflows.options.Timetable`'s fields, and ``jitter``,
            ``overlap``, ``catchup_window``.

    Raises:
        ScheduleNotFound, InvalidSchedule, UnknownWorkflow; InvalidArguments for a keyword that is
        no option.
    """
    unknown_keywords(changes, UPDATABLE, "update_schedule")
    given: dict[str, Any] = dict(changes)
    store = get_engine().store
    for _ in range(10):
        current = store.get_schedule(_lookup_id(schedule_id))
        spec_data = dict(current.spec)
        timing = {k: v for k, v in given.items() if k in TIMETABLE_KEYWORDS or k == "jitter"}
        if timing.get("cron") is not None:
            spec_data["every"] = None
        if timing.get("every") is not None:
            spec_data["cron"] = None
        spec_data.update({k: v.isoformat() if isinstance(v, datetime) else v for k, v in timing.items()})
        spec = ScheduleSpec.from_dict(spec_data)
        update: dict[str, Any] = {}
        if spec.to_dict() != current.spec:
            update["spec"] = spec.to_dict()
        name = _workflow_name(given["workflow"]) if "workflow" in given else current.workflow
        if name != current.workflow:
            update["workflow"] = name
        if "overlap" in given:
            update["overlap"] = _check_overlap(given["overlap"])
        if "catchup_window" in given:
            update["catchup_window"] = _check_window(given["catchup_window"])
        if "args" in given or "kwargs" in given:
            old_args, old_kwargs = codec.loads(current.args)
            update["args"] = _encode_args(name, given.get("args", old_args), given.get("kwargs", old_kwargs))
        reschedule = _first_fire(spec, current.schedule_id, get_engine().now()) if "spec" in update else None
        active = current.state == ScheduleState.ACTIVE
        if store.update_schedule(current.schedule_id, current.revision, update, reschedule=reschedule,
                                 active=active, seen_pending=current.pending is not None):
            return get_schedule(current.schedule_id)
    raise InvalidSchedule(f"schedule {schedule_id!r} kept changing under the update; try again")


def pause_schedule(schedule_id: str) -> ScheduleInfo:
    """Stop firing a schedule; running runs go on and buffered fires wait.

    Raises:
        ScheduleNotFound: no schedule has this id.
    """
    return schedule_info(get_engine().store.pause_schedule(_lookup_id(schedule_id)))


def resume_schedule(schedule_id: str) -> ScheduleInfo:
    """Fire a paused schedule again from its next fire time after now (fires missed while paused are not run).

    Raises:
        ScheduleNotFound: no schedule has this id.
    """
    from workflows.core.background.firing import drain, ensure_listener

    engine = get_engine()
    ensure_listener(engine)
    for _ in range(10):
        current = engine.store.get_schedule(_lookup_id(schedule_id))
        if current.state != ScheduleState.PAUSED:
            return schedule_info(current)
        spec = ScheduleSpec.from_dict(current.spec)
        next_fire, next_due = _first_fire(spec, current.schedule_id, engine.now())
        unpaused = engine.store.unpause_schedule(current.schedule_id, next_fire=next_fire, next_due=next_due,
                                                 seen_pending=current.pending is not None)
        if unpaused is not None:
            return schedule_info(drain(engine, unpaused))
    raise InvalidSchedule(f"schedule {schedule_id!r} kept changing under the unpause; try again")


def delete_schedule(schedule_id: str) -> None:
    """Delete a schedule; its running runs go on, its buffered fires are dropped.

    Raises:
        ScheduleNotFound: no schedule has this id.
    """
    if not get_engine().store.delete_schedule(_lookup_id(schedule_id)):
        raise ScheduleNotFound(schedule_id)


def _fire_by_hand(schedule_id: str, fires: list[float], overlap: str | None) -> list[tuple[str, float]]:
    from workflows.core.background.firing import LOST, apply_fire, ensure_listener

    engine = get_engine()
    ensure_listener(engine)
    current = engine.store.get_schedule(_lookup_id(schedule_id))
    policy = current.overlap if overlap is None else _check_overlap(overlap)
    outcomes = []
    for fire in fires:
        for _ in range(20):  # a lost condition (a concurrent fire, a claim open for a moment): re-read, retry
            outcome, after = apply_fire(engine, current, fire, policy, engine.now())
            current = after or engine.store.get_schedule(current.schedule_id)
            if outcome != LOST:
                break
            time.sleep(0.05)
        outcomes.append((outcome, fire))
    return outcomes


def trigger_schedule(schedule_id: str, *, overlap: str | None = None) -> RunHandle | None:
    """Fire a schedule now, outside its timetable, under its overlap policy (or ``overlap``).

    Returns:
        The run started, or None if the policy skipped or buffered the fire.

    Raises:
        ScheduleNotFound: no schedule has this id.
    """
    from workflows.core.background.firing import STARTED, fire_run_id, to_datetime, to_epoch

    fire = to_epoch(to_datetime(get_engine().now()))  # exact to the microsecond, as fire keys are
    [(outcome, _)] = _fire_by_hand(schedule_id, [fire], overlap)
    return RunHandle(fire_run_id(schedule_id, fire)) if outcome == STARTED else None


def backfill_schedule(schedule_id: str, start: datetime, end: datetime, *, overlap: str | None = None) -> int:
    """Fire a schedule for every fire time of its timetable in ``[start, end]``, oldest first.

    Each fire time starts at most one run ever, so backfilling a range twice, or a
    range beat already fired, starts nothing new. The overlap policy applies
    (default: the schedule's): use ``overlap="allow_all"`` or ``"buffer_all"`` to run
    every fire.

    Returns:
        The number of fires started or buffered.

    Raises:
        ScheduleNotFound, InvalidSchedule (naive datetimes, start after end, over 1000 fires).
    """
    from workflows.core.background.firing import BUFFERED, STARTED, to_epoch

    current = get_engine().store.get_schedule(_lookup_id(schedule_id))
    spec = ScheduleSpec.from_dict(current.spec)
    for what, value in (("start", start), ("end", end)):
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise InvalidSchedule(f"backfill {what} must be a timezone-aware datetime, got {value!r}")
    if start > end:
        raise InvalidSchedule(f"backfill start {start.isoformat()} is after its end {end.isoformat()}")
    moments = fire_times_between(spec, start - timedelta(microseconds=1), end, limit=MAX_BACKFILL + 1)
    if len(moments) > MAX_BACKFILL:
        raise InvalidSchedule(f"backfill covers more than {MAX_BACKFILL} fires; split the range")
    outcomes = _fire_by_hand(current.schedule_id, [to_epoch(m) for m in moments], overlap)
    return sum(outcome in (STARTED, BUFFERED) for outcome, _ in outcomes)

