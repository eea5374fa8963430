"""Schedule maths: when cron and fixed-interval schedules fire. Pure, no I/O.

``cron`` takes the five standard fields (``minute hour day month weekday``) or an alias
(``@hourly``, ``@daily``, ``@weekly``, ``@monthly``, ``@yearly``), matched against the wall
clock of the IANA ``timezone``; day-of-month and weekday combine with OR, as in Vixie cron.
Six/seven-field forms are rejected (croniter puts seconds last, Quartz first: ambiguous; use
``every`` below a minute), and so are croniter's random ``R`` and hashed ``H`` fields.

Daylight saving time, e.g. ``30 2 * * *`` in Europe/Paris:

* A wall time skipped by a spring-forward gap fires once, moved forward by the gap:
  2:30 does not exist on 2026-03-29, so it fires at 03:30 CEST (01:30 UTC). A moved
  time equal to another fire time fires once.
* A wall time repeated by a fall-back fires once, at its first occurrence: 2026-10-25
  02:30 CEST (00:30 UTC), not 02:30 CET. A schedule whose hour field matches every hour
  fires in both copies of the repeated hour, so ``0 * * * *`` fires once per real hour:
  25 times on 2026-10-25, 23 times on 2026-03-29.

``every`` fires at ``start_at + k * every`` (the Unix epoch without ``start_at``):
elapsed time, unaffected by time zones and daylight saving time.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from workflows.durations import Duration, to_seconds
from workflows.errors import InvalidDuration, InvalidSchedule

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_REFERENCE = datetime(2000, 1, 1)
_US = timedelta(microseconds=1)
_MINUTE = timedelta(minutes=1)
_HOUR = timedelta(hours=1)
_NO_SHIFT = timedelta(0)
_RANDOM_FIELD = re.compile(r"(?:^|,)[RH](?:$|[(/,])", re.IGNORECASE)


@dataclass(frozen=True)
class ScheduleSpec:
    """When a schedule fires; build one with :meth:`build`, which also parses durations.

    Attributes:
        cron: cron expression, or None; exactly one of ``cron`` and ``every`` is set.
        every: interval in seconds, or None.
        timezone: IANA time zone the cron expression is read in.
        start_at: first instant a fire may happen (inclusive); the anchor of ``every``.
        end_at: last instant a fire may happen (inclusive).
        jitter: upper bound, in seconds, of the delay :func:`apply_jitter` adds.
    """

    cron: str | None = None
    every: float | None = None
    timezone: str = "UTC"
    start_at: datetime | None = None
    end_at: datetime | None = None
    jitter: float = 0.0

    def __post_init__(self) -> None:
        _validate(self)

    @classmethod
    def build(
        cls,
        cron: str | None = None,
        every: Duration | None = None,
        timezone: str = "UTC",
        start_at: datetime | None = None,
        end_at: datetime | None = None,
        jitter: Duration | None = None,
    ) -> ScheduleSpec:
        """Validate and normalise options; ``every``/``jitter`` take seconds, ``"5m"`` or a timedelta.

        Raises:
            InvalidSchedule: an option is invalid; the message names the bad value.
        """
        _one_of(cron, every)
        if cron is not None and not isinstance(cron, str):
            raise InvalidSchedule(f"invalid cron expression {cron!r}: not a string")
        return cls(
            cron=None if cron is None else " ".join(cron.split()),
            every=None if every is None else parse_every(every),
            timezone=timezone,
            start_at=None if start_at is None else _aware(start_at, "start_at").astimezone(UTC),
            end_at=None if end_at is None else _aware(end_at, "end_at").astimezone(UTC),
            jitter=0.0 if jitter is None else _seconds(jitter, "jitter"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the spec as JSON-safe primitives, datetimes as ISO 8601 strings."""
        start_at, end_at = (None if t is None else t.isoformat() for t in (self.start_at, self.end_at))
        return {
            "cron": self.cron,
            "every": self.every,
            "timezone": self.timezone,
            "start_at": start_at,
            "end_at": end_at,
            "jitter": self.jitter,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScheduleSpec:
        """Rebuild a spec from :meth:`to_dict` output (unknown keys ignored); raises InvalidSchedule."""
        if not isinstance(data, Mapping):
            raise InvalidSchedule(f"a stored schedule must be a mapping, got {data!r}")
        start_at, end_at = (_parse_time(data.get(k), k) for k in ("start_at", "end_at"))
        get = data.get
        return cls.build(get("cron"), get("every"), get("timezone", "UTC"), start_at, end_at, get("jitter"))


def parse_every(value: Duration) -> float:
    """Return a positive interval in seconds from seconds, ``"5m"`` or a timedelta; raises InvalidSchedule."""
    try:
        seconds = to_seconds(value, what="every", allow_zero=False)
    except InvalidDuration as exc:
        raise InvalidSchedule(f"invalid every {value!r}: {exc}") from exc
    if seconds < 1e-6:
        raise InvalidSchedule(f"invalid every {value!r}: shorter than a microsecond")
    return seconds


def next_fire(spec: ScheduleSpec, after: datetime) -> datetime | None:
    """Return the first fire time strictly after aware ``after``, in UTC; None if none is left."""
    return _next(spec, _aware(after, "after"), None)


def fire_times_between(spec: ScheduleSpec, start: datetime, end: datetime, limit: int = 10000) -> list[datetime]:
    """Return the fire times in ``(start, end]`` in UTC, oldest first, at most ``limit`` of them."""
    cursor, end = _aware(start, "start"), _aware(end, "end")
    if limit < 0:
        raise InvalidSchedule(f"limit must be >= 0, got {limit!r}")
    it = None if spec.cron is None else croniter(spec.cron, _REFERENCE)
    fires: list[datetime] = []
    while len(fires) < limit and (fire := _next(spec, cursor, it)) is not None and fire <= end:
        fires.append(fire)
        cursor = fire
    return fires


def apply_jitter(fire_time: datetime, jitter: float, key: str) -> datetime:
    """Return ``fire_time`` (in UTC) delayed by ``[0, jitter)`` seconds, from a hash of ``key`` and the time.

    Every beat computes the same delay for the same key and instant.
    """
    fire_time = _aware(fire_time, "fire_time").astimezone(UTC)
    bound = math.floor(_seconds(jitter, "jitter") * 1_000_000)
    if bound <= 0:
        return fire_time
    digest = hashlib.sha256(f"{key}\x00{fire_time.isoformat()}".encode()).digest()
    return fire_time + _US * ((int.from_bytes(digest[:8], "big") * bound) >> 64)


def _next(spec: ScheduleSpec, after: datetime, it: Any) -> datetime | None:
    """Return the next fire after ``after`` within ``start_at``/``end_at``; ``it``: a croniter or None."""
    if spec.start_at is not None and after < spec.start_at:
        after = spec.start_at - _US  # start_at itself may fire
    try:
        if spec.every is not None:
            anchor, period = spec.start_at or EPOCH, round(spec.every * 1_000_000)
            fire: datetime | None = anchor + _US * period * ((after - anchor) // _US // period + 1)
        else:
            cron = str(spec.cron)
            cursor = croniter(cron, _REFERENCE) if it is None else it
            fire = _next_cron(cursor, ZoneInfo(spec.timezone), _every_hour(cron), after)
    except (OverflowError, CroniterBadDateError):
        return None
    if fire is None or (spec.end_at is not None and fire > spec.end_at):
        return None
    return fire.astimezone(UTC)


def _next_cron(it: Any, tz: ZoneInfo, every_hour: bool, after: datetime) -> datetime | None:
    """Return the first instant after ``after`` whose wall time in ``tz`` matches ``it``.

    A skipped or repeated wall time can map to a later instant than a wall time after it,
    so the scan starts a margin before ``after`` and, once a match lands after ``after``,
    goes on for the size of that match's transition.
    """
    local = after.astimezone(tz).replace(tzinfo=None, fold=0)
    it.set_current(local - max(_resolve(local, tz)[2], _recent_shift(after, tz)) - _MINUTE, force=True)
    best: datetime | None = None
    horizon: datetime | None = None
    while True:
        try:
            wall: datetime = it.get_next(datetime)
        except CroniterBadDateError:
            return best
        if horizon is not None and wall > horizon:
            return best
        first, repeat, shift = _resolve(wall, tz)
        for instant in (first, repeat if every_hour else None):
            if instant is not None and instant > after and (best is None or instant < best):
                best = instant
        if best is not None and horizon is None:
            if not shift:
                return best
            horizon = wall + shift


def _resolve(wall: datetime, tz: ZoneInfo) -> tuple[datetime, datetime | None, timedelta]:
    """Map a naive wall time to (its instant, the instant of its repeat or None, transition size)."""
    early = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    late = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if early <= late:  # equal, or repeated by a fall-back (fold=0 is the first occurrence)
        return early, (late if late > early else None), late - early
    return early, None, early - late  # skipped by a gap: fold=0 moves it forward by the gap


def _recent_shift(instant: datetime, tz: ZoneInfo) -> timedelta:
    """Return the largest UTC offset change of ``tz`` in the 25 hours before ``instant``."""
    now = instant.astimezone(tz).utcoffset() or _NO_SHIFT
    return max(abs(now - ((instant - k * _HOUR).astimezone(tz).utcoffset() or _NO_SHIFT)) for k in range(1, 26))


@lru_cache(maxsize=512)
def _every_hour(expr: str) -> bool:
    """Validate a cron expression; return whether its hour field matches every hour."""
    fields = expr.split()
    if not (len(fields) == 5 or (len(fields) == 1 and expr.startswith("@"))):
        raise InvalidSchedule(f"invalid cron expression {expr!r}: need 5 fields (minute hour day month weekday)")
    if any(_RANDOM_FIELD.search(field) for field in fields):
        raise InvalidSchedule(f"invalid cron expression {expr!r}: random (R) and hashed (H) fields are not supported")
    try:
        it = croniter(expr, _REFERENCE)
        it.get_next(datetime)
    except CroniterBadDateError as exc:
        raise InvalidSchedule(f"cron expression {expr!r} never fires") from exc
    except (CroniterError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise InvalidSchedule(f"invalid cron expression {expr!r}: {exc}") from exc
    hours = it.expanded[1]
    return hours == ["*"] or set(hours) == set(range(24))


def _validate(spec: ScheduleSpec) -> None:
    """Raise InvalidSchedule unless ``spec`` is consistent and normalised."""
    _one_of(spec.cron, spec.every)
    if spec.cron is not None:
        if not isinstance(spec.cron, str):
            raise InvalidSchedule(f"invalid cron expression {spec.cron!r}: not a string")
        _every_hour(spec.cron)
    for what, number in (("every", spec.every), ("jitter", spec.jitter)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))):
            raise InvalidSchedule(f"{what} must be seconds as a number, got {number!r} (use ScheduleSpec.build)")
    if spec.every is not None:
        parse_every(spec.every)
    _seconds(spec.jitter, "jitter")
    try:
        ZoneInfo(spec.timezone)
    except (ZoneInfoNotFoundError, ValueError, OSError, TypeError) as exc:
        raise InvalidSchedule(f"unknown time zone {spec.timezone!r}") from exc
    start, end = spec.start_at, spec.end_at
    for what, value in (("start_at", start), ("end_at", end)):
        if value is not None:
            _aware(value, what)
    if start is not None and end is not None and start >= end:
        raise InvalidSchedule(f"start_at {start.isoformat()} must be before end_at {end.isoformat()}")


def _one_of(cron: object, every: object) -> None:
    """Raise InvalidSchedule unless exactly one of ``cron`` and ``every`` is given."""
    if (cron is None) == (every is None):
        raise InvalidSchedule(f"give exactly one of cron or every, got cron={cron!r} and every={every!r}")


def _aware(value: object, what: str) -> datetime:
    """Return ``value`` if it is a timezone-aware datetime, else raise InvalidSchedule."""
    if not isinstance(value, datetime):
        raise InvalidSchedule(f"{what} must be a datetime, got {value!r}")
    if value.utcoffset() is None:
        raise InvalidSchedule(f"{what} must be timezone-aware, got naive {value.isoformat()}")
    return value


def _seconds(value: Duration, what: str) -> float:
    """Return a non-negative duration in seconds, raising InvalidSchedule."""
    try:
        return to_seconds(value, what=what)
    except InvalidDuration as exc:
        raise InvalidSchedule(f"invalid {what} {value!r}: {exc}") from exc


def _parse_time(value: object, what: str) -> datetime | None:
    """Parse a stored ISO 8601 time (``Z`` accepted); pass None and datetimes through."""
    if value is None or isinstance(value, datetime):
        return value
    text = str(value)
    try:
        return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError as exc:
        raise InvalidSchedule(f"{what} {value!r} is not an ISO 8601 time") from exc
