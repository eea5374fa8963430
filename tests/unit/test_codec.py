"""The codec: exact round-trips of JSON data, datetimes, dates and timedeltas, or a SerializationError."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest

from workflows import codec

TAG = "__wf__"


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (``1 == 1.0 == True`` does not count)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, datetime):
        return a == b and a.tzinfo == b.tzinfo
    return bool(a == b)


def round_trip(value: Any) -> Any:
    return codec.loads(codec.dumps(value))


def test_timedelta_beyond_float_precision_comes_back_exactly() -> None:
    for value in (timedelta(days=999_999_999, hours=23, microseconds=999_999), timedelta(days=99_421, microseconds=1),
                  timedelta.max, timedelta.min, timedelta(microseconds=-1)):
        assert round_trip(value) == value


# -- compatibility ----------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ('{"__wf__":"datetime","v":"2020-01-02T03:04:05.000006+01:00"}',
     datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=1)))),
    ('{"__wf__":"datetime","v":"2020-01-02T03:04:05"}', datetime(2020, 1, 2, 3, 4, 5)),
    ('{"__wf__":"date","v":"2020-01-02"}', date(2020, 1, 2)),
    ('{"__wf__":"timedelta","v":90.5}', timedelta(seconds=90.5)),
    ('{"__wf__":"timedelta","v":-1}', timedelta(seconds=-1)),
    ('[[1,"a"],{"when":{"__wf__":"date","v":"2020-01-02"}}]', [[1, "a"], {"when": date(2020, 1, 2)}]),
    # what the old codec left alone stays alone
    ('{"__wf__":"date","v":"not a date"}', {TAG: "date", "v": "not a date"}),
    ('{"__wf__":"date","v":"2020-01-02","x":1}', {TAG: "date", "v": "2020-01-02", "x": 1}),
    ('{"__wf__":"pickle","v":"gASVAAAA"}', {TAG: "pickle", "v": "gASVAAAA"}),
    ('{"__wf__":"timedelta","v":"1e999"}', {TAG: "timedelta", "v": "1e999"}),
    ("null", None),
])
def test_data_written_by_the_previous_codec_decodes_the_same(text: str, expected: Any) -> None:
    assert same(codec.loads(text), expected)
    assert codec.loads(None) is None


def test_timedelta_is_encoded_as_seconds_when_they_hold_it_exactly() -> None:
    assert codec.dumps(timedelta(seconds=90)) == '{"__wf__":"timedelta","v":90.0}'
    assert codec.dumps(timedelta(days=999_999_999)) == '{"__wf__":"timedelta","v":86399999913600.0}'
    assert codec.dumps(timedelta.max) == '{"__wf__":"timedelta","v":[999999999,86399,999999]}'
