"""Schedule maths of beat.cron: DST, intervals, bounds, validation, jitter, storage."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from beat.cron import ScheduleSpec, apply_jitter, fire_times_between, next_fire, parse_every
from workflows.errors import InvalidSchedule, WorkflowError

UTC = timezone.utc


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def cron(expr: str, tz: str = "UTC", **kwargs: Any) -> ScheduleSpec:
    return ScheduleSpec.build(cron=expr, timezone=tz, **kwargs)


# --- daylight saving time -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "tz", "start", "expected"),
    [
        # Paris spring-forward 2026-03-29: 02:30 does not exist, fires at 03:30 CEST.
        (
            "30 2 * * *",
            "Europe/Paris",
            utc(2026, 3, 28),
            [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)],
        ),
        # Paris fall-back 2026-10-25: 02:30 happens twice, fires at the first (CEST) only.
        (
            "30 2 * * *",
            "Europe/Paris",
            utc(2026, 10, 24),
            [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)],
        ),
        # New York spring-forward 2026-03-08: 02:30 EST does not exist, fires at 03:30 EDT.
        (
            "30 2 * * *",
            "America/New_York",
            utc(2026, 3, 7),
            [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 30), utc(2026, 3, 9, 6, 30)],
        ),
        # New York fall-back 2026-11-01: 01:30 happens twice, fires at the first (EDT) only.
        (
            "30 1 * * *",
            "America/New_York",
            utc(2026, 10, 31),
            [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)],
        ),
    ],
)
def test_daily_schedule_fires_exactly_once_on_dst_days(
    expr: str, tz: str, start: datetime, expected: list[datetime]
) -> None:
    spec = cron(expr, tz)
    assert fire_times_between(spec, start, start + timedelta(days=3)) == expected
    chained = [start]
    for _ in expected:
        fire = next_fire(spec, chained[-1])
        assert fire is not None
        chained.append(fire)
    assert chained[1:] == expected


def test_next_fire_from_inside_the_gap_and_the_repeated_hour() -> None:
    spec = cron("30 2 * * *", "Europe/Paris")
    # 03:10 CEST, just after the gap: the moved 02:30 (= 03:30 CEST) is still ahead.
    assert next_fire(spec, utc(2026, 3, 29, 1, 10)) == utc(2026, 3, 29, 1, 30)
    # After the first 02:30 of the fall-back day, the repeat (02:30 CET) is skipped.
    assert next_fire(spec, utc(2026, 10, 25, 0, 30)) == utc(2026, 10, 26, 1, 30)
    # From inside the repeated hour (02:10 CET), the next fire is the following day.
    assert next_fire(spec, utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 26, 1, 30)


def test_hourly_fires_once_per_real_hour_across_fall_back() -> None:
    # Local 2026-10-25 in Paris lasts 25 hours: 22:00 UTC on the 24th to 23:00 UTC on the 25th.
    fires = fire_times_between(cron("0 * * * *", "Europe/Paris"), utc(2026, 10, 24, 21, 59), utc(2026, 10, 25, 22, 59))
    assert len(fires) == 25
    assert fires == [utc(2026, 10, 24, 22) + timedelta(hours=k) for k in range(25)]
    local = [f.astimezone(ZoneInfo("Europe/Paris")) for f in fires]
    assert [t.hour for t in local[2:5]] == [2, 2, 3]  # 02:00 CEST, 02:00 CET, 03:00 CET
    assert {t.date() for t in local} == {datetime(2026, 10, 25).date()}


def test_hourly_fires_23_times_across_spring_forward() -> None:
    fires = fire_times_between(cron("0 * * * *", "Europe/Paris"), utc(2026, 3, 28, 22, 59), utc(2026, 3, 29, 21, 59))
    assert fires == [utc(2026, 3, 28, 23) + timedelta(hours=k) for k in range(23)]


def test_sub_hourly_wildcard_fires_through_both_copies_of_the_repeated_hour() -> None:
    fires = fire_times_between(
        cron("*/30 * * * *", "Europe/Paris"), utc(2026, 10, 24, 21, 59), utc(2026, 10, 25, 22, 59)
    )
    assert len(fires) == 50
    assert fires == sorted(set(fires))


def test_schedule_pinned_to_the_repeated_hour_fires_at_first_occurrence_only() -> None:
    fires = fire_times_between(cron("0,30 2 * * *", "Europe/Paris"), utc(2026, 10, 24, 12), utc(2026, 10, 25, 12))
    assert fires == [utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 0, 30)]


def test_half_hour_gap_orders_moved_and_real_times() -> None:
    # Lord Howe springs forward 30 minutes at 02:00 (+10:30 -> +11:00) on 2026-10-04:
    # 02:00 and 02:20 are moved to 02:30 and 02:50, while 02:40 exists.
    spec = cron("*/20 2 * * *", "Australia/Lord_Howe")
    expected = [utc(2026, 10, 3, 15, 30), utc(2026, 10, 3, 15, 40), utc(2026, 10, 3, 15, 50)]
    assert fire_times_between(spec, utc(2026, 10, 3), utc(2026, 10, 3, 23)) == expected
    assert next_fire(spec, utc(2026, 10, 3, 15, 30)) == utc(2026, 10, 3, 15, 40)


def _brute_force(expr: str, tz_name: str, start: datetime, end: datetime) -> list[datetime]:
    """Reference: walk every local minute; gaps move forward, repeats fire twice only if hourly."""
    tz, fires = ZoneInfo(tz_name), set()
    every_hour = croniter(expr).expanded[1] == ["*"]
    wall = (start - timedelta(hours=3)).astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)
    while wall <= (end + timedelta(hours=3)).astimezone(tz).replace(tzinfo=None):
        if croniter.match(expr, wall):
            first, second = (wall.replace(tzinfo=tz, fold=f).astimezone(UTC) for f in (0, 1))
            exists = first.astimezone(tz).replace(tzinfo=None) == wall
            fires.add(max(first, second) if not exists else min(first, second))
            if exists and every_hour:
                fires.add(max(first, second))
        wall += timedelta(minutes=1)
    return sorted(f for f in fires if start < f <= end)


@pytest.mark.parametrize(
    ("expr", "tz", "day"),
    [
        ("10,40 1-3 * * *", "Europe/Paris", utc(2026, 3, 29)),
        ("10,40 1-3 * * *", "Europe/Paris", utc(2026, 10, 25)),
        ("*/20 * * * *", "Australia/Lord_Howe", utc(2026, 10, 3)),
        ("15 */2 * * *", "America/New_York", utc(2026, 11, 1)),
    ],
)
def test_matches_brute_force_reference_around_transitions(expr: str, tz: str, day: datetime) -> None:
    spec, start, end = cron(expr, tz), day - timedelta(hours=12), day + timedelta(hours=36)
    expected = _brute_force(expr, tz, start, end)
    assert len(expected) >= 8 and fire_times_between(spec, start, end) == expected
    for minutes in range(0, 48 * 60, 7):
        after = start + timedelta(minutes=minutes, seconds=minutes % 60)
        if after < expected[-1]:
            assert next_fire(spec, after) == next(f for f in expected if f > after)


# --- intervals, bounds, ranges ------------------------------------------------------------


def test_every_is_anchored_at_start_at() -> None:
    spec = ScheduleSpec.build(every="5m", start_at=utc(2026, 1, 1, 0, 0, 3))
    assert next_fire(spec, utc(2026, 1, 1, 10, 7)) == utc(2026, 1, 1, 10, 10, 3)
    assert next_fire(spec, utc(2026, 1, 1, 10, 10, 3)) == utc(2026, 1, 1, 10, 15, 3)  # strictly after
    assert next_fire(spec, utc(2025, 6, 1)) == utc(2026, 1, 1, 0, 0, 3)  # start_at itself fires


def test_every_without_start_at_is_anchored_at_the_epoch_in_utc() -> None:
    spec = ScheduleSpec.build(every=3600, timezone="Asia/Kolkata")  # +05:30 must not shift it
    after = datetime(2026, 5, 5, 10, 15, 30, tzinfo=ZoneInfo("Europe/Paris"))  # 08:15:30 UTC
    fire = next_fire(spec, after)
    assert fire == utc(2026, 5, 5, 9) and fire.tzinfo is UTC


def test_every_does_not_drift() -> None:
    spec = ScheduleSpec.build(every=0.1, start_at=utc(2026, 1, 1))
    cursor: datetime | None = utc(2026, 1, 1)
    for _ in range(10_000):
        assert cursor is not None
        cursor = next_fire(spec, cursor)
    assert cursor == utc(2026, 1, 1, 0, 16, 40)  # exactly 1000 s later
    fires = fire_times_between(
        ScheduleSpec.build(every="7s", start_at=utc(2026, 1, 1)), utc(2026, 1, 1), utc(2026, 1, 2), limit=20_000
    )
    assert len(fires) == 86400 // 7 and fires[-1] == utc(2026, 1, 1) + timedelta(seconds=7 * (86400 // 7))
    assert {(b - a).total_seconds() for a, b in pairwise(fires)} == {7.0}


def test_end_at_stops_the_schedule() -> None:
    spec = cron("0 0 * * *", end_at=utc(2026, 1, 3))
    assert fire_times_between(spec, utc(2026, 1, 1), utc(2026, 1, 10)) == [utc(2026, 1, 2), utc(2026, 1, 3)]
    assert next_fire(spec, utc(2026, 1, 3)) is None
    interval = ScheduleSpec.build(every="1h", end_at=utc(2026, 1, 1, 2, 30))
    assert next_fire(interval, utc(2026, 1, 1, 2)) is None


def test_start_at_is_respected_and_inclusive() -> None:
    assert next_fire(cron("0 0 * * *", start_at=utc(2026, 1, 5, 12)), utc(2026, 1, 1)) == utc(2026, 1, 6)
    assert next_fire(cron("0 0 * * *", start_at=utc(2026, 1, 5)), utc(2026, 1, 1)) == utc(2026, 1, 5)
    assert next_fire(cron("0 0 * * *", start_at=utc(2026, 1, 5)), utc(2026, 1, 7)) == utc(2026, 1, 8)


def test_fire_times_between_every_five_minutes_over_an_hour() -> None:
    spec = cron("*/5 * * * *")
    fires = fire_times_between(spec, utc(2026, 2, 2, 10), utc(2026, 2, 2, 11))
    assert len(fires) == 12
    assert fires[0] == utc(2026, 2, 2, 10, 5) and fires[-1] == utc(2026, 2, 2, 11)  # start excluded, end included
    assert fire_times_between(spec, utc(2026, 2, 2, 10), utc(2026, 2, 2, 11), limit=5) == fires[:5]


def test_next_fire_returns_utc_for_any_input_zone() -> None:
    after = datetime(2026, 7, 1, 9, 0, tzinfo=ZoneInfo("America/New_York"))  # 13:00 UTC
    fire = next_fire(cron("0 12 * * *", "Asia/Tokyo"), after)
    assert fire == utc(2026, 7, 2, 3) and fire.tzinfo is UTC


# --- validation ------------------------------------------------------------------------


NAIVE = datetime(2026, 1, 1, 12, 0)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"cron": "61 * * * *"}, "61 * * * *"),
        ({"cron": "every day at noon"}, "every day at noon"),
        ({"cron": "0 0 * * * *"}, "0 0 * * * *"),
        ({"cron": "R * * * *"}, "R * * * *"),
        ({"cron": "0 0 31 2 *"}, "0 0 31 2 *"),
        ({"cron": "0 * * * *", "timezone": "Mars/Olympus_Mons"}, "Mars/Olympus_Mons"),
        ({"every": 0}, "0"),
        ({"every": -5}, "-5"),
        ({"every": "abc"}, "abc"),
        ({"every": timedelta(0)}, "timedelta(0)"),
        ({"every": 60, "start_at": NAIVE}, "2026-01-01T12:00:00"),
        ({"every": 60, "end_at": NAIVE}, "2026-01-01T12:00:00"),
        ({"every": 60, "start_at": utc(2026, 2, 1), "end_at": utc(2026, 1, 1)}, "2026-02-01T00:00:00+00:00"),
        ({"every": 60, "jitter": -1}, "-1"),
        ({"cron": "0 * * * *", "every": 60}, "cron='0 * * * *' and every=60"),
        ({}, "cron=None and every=None"),
    ],
)
def test_invalid_schedule_names_the_offending_value(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        ScheduleSpec.build(**kwargs)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, WorkflowError)


def test_naive_after_and_bad_direct_construction_are_rejected() -> None:
    with pytest.raises(InvalidSchedule, match="after must be timezone-aware"):
        next_fire(cron("0 * * * *"), NAIVE)
    with pytest.raises(InvalidSchedule, match="Nowhere/City"):
        ScheduleSpec(cron="0 * * * *", timezone="Nowhere/City")
    with pytest.raises(InvalidSchedule, match="'5m'"):
        ScheduleSpec(every="5m")  # type: ignore[arg-type]


def test_parse_every() -> None:
    assert parse_every("2s") == 2.0
    assert parse_every("5m") == 300.0
    assert parse_every(timedelta(hours=1)) == 3600.0
    assert parse_every(1.5) == 1.5
    for bad in (0, -5, "abc", "0s", True):
        with pytest.raises(InvalidSchedule, match="invalid every"):
            parse_every(bad)


# --- jitter and storage ----------------------------------------------------------------


def test_jitter_is_deterministic_and_within_bounds() -> None:
    fire = utc(2026, 3, 1, 12)
    delays = [(apply_jitter(fire, 30.0, f"schedule-{i}") - fire).total_seconds() for i in range(500)]
    assert all(0 <= d < 30 for d in delays)
    assert len(set(delays)) > 490 and min(delays) < 3 and max(delays) > 27  # spread over the range
    assert apply_jitter(fire, 30.0, "schedule-7") == apply_jitter(fire, 30.0, "schedule-7")
    same_instant = fire.astimezone(ZoneInfo("Asia/Tokyo"))
    assert apply_jitter(same_instant, 30.0, "schedule-7") == apply_jitter(fire, 30.0, "schedule-7")
    assert apply_jitter(fire + timedelta(hours=1), 30.0, "a") - timedelta(hours=1) != apply_jitter(fire, 30.0, "a")
    assert apply_jitter(fire, 0.0, "schedule-7") == fire
    with pytest.raises(InvalidSchedule):
        apply_jitter(fire, -1.0, "x")


def test_to_dict_from_dict_round_trip() -> None:
    spec = ScheduleSpec.build(
        cron="0  9 * *  MON-FRI",
        timezone="Europe/Paris",
        start_at=datetime(2026, 1, 1, 8, tzinfo=ZoneInfo("Europe/Paris")),
        end_at=utc(2027, 1, 1),
        jitter="30s",
    )
    data = json.loads(json.dumps(spec.to_dict()))
    assert data == {
        "cron": "0 9 * * MON-FRI",
        "every": None,
        "timezone": "Europe/Paris",
        "start_at": "2026-01-01T07:00:00+00:00",
        "end_at": "2027-01-01T00:00:00+00:00",
        "jitter": 30.0,
    }
    assert ScheduleSpec.from_dict(data) == spec
    interval = ScheduleSpec.build(every=timedelta(minutes=5))
    assert ScheduleSpec.from_dict(json.loads(json.dumps(interval.to_dict()))) == interval
    assert ScheduleSpec.from_dict({**data, "end_at": "2027-01-01T00:00:00Z"}).end_at == utc(2027, 1, 1)
    with pytest.raises(InvalidSchedule, match="yesterday"):
        ScheduleSpec.from_dict({**data, "start_at": "yesterday"})
