"""The codec: exact round-trips of JSON data, datetimes, dates and timedeltas, or a SerializationError."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows import codec
from workflows.errors import SerializationError

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


# -- property: everything the codec accepts comes back exactly ---------------------------
keys = st.one_of(st.sampled_from([TAG, "v", "datetime", "date", "timedelta", "dict", ""]), st.text(max_size=8))
offsets = st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59))
zones = st.none() | st.just(timezone.utc) | offsets.map(timezone)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(),
    st.datetimes(timezones=zones), st.dates(), st.timedeltas(),
    st.sampled_from([TAG, "datetime", "date", "timedelta", "dict", "2020-01-01", "2020-01-01T00:00:00"]),
)
json_like = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)
# dicts shaped like the codec's own tags, with any value under "v"
tag_shaped = st.fixed_dictionaries(
    {TAG: st.sampled_from(["datetime", "date", "timedelta", "dict", "other"]) | st.text(max_size=4),
     "v": json_like},
    optional={"x": json_like},
)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(json_like, tag_shaped, st.lists(tag_shaped, max_size=3),
                 st.dictionaries(keys, tag_shaped, max_size=3)))
def test_round_trip_is_exact(value: Any) -> None:
    assert same(round_trip(value), value)


@pytest.mark.parametrize("value", [
    pytest.param({TAG: "date", "v": "2020-01-01"}, id="date-tag"),
    pytest.param({TAG: "datetime", "v": "2020-01-01T10:00:00+00:00"}, id="datetime-tag"),
    pytest.param({TAG: "timedelta", "v": 90}, id="timedelta-tag"),
    pytest.param({TAG: "timedelta", "v": [1, 2, 3]}, id="timedelta-parts-tag"),
    pytest.param({TAG: "dict", "v": [["a", 1]]}, id="escape-tag"),
    pytest.param({TAG: "dict", "v": {TAG: "date", "v": "2020-01-01"}}, id="escape-tag-of-a-date-tag"),
    pytest.param({TAG: "date", "v": date(2020, 1, 1)}, id="date-tag-of-a-date"),
    pytest.param({TAG: "other", "v": 1, "w": 2}, id="three-keys"),
    pytest.param({TAG: {TAG: "date", "v": "2020-01-01"}}, id="tag-under-the-tag-key"),
    pytest.param([{"outer": {TAG: "timedelta", "v": 1.5, "when": datetime(2020, 1, 1, 12, 30)}}], id="nested"),
])
def test_a_dict_shaped_like_a_tag_comes_back_as_the_same_dict(value: Any) -> None:
    assert same(round_trip(value), value)


def test_tag_shaped_dict_inside_a_pydantic_model_comes_back_as_a_dict() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Model(pydantic.BaseModel):
        extra: dict[str, Any]

    assert round_trip(Model(extra={TAG: "date", "v": "2020-01-01"})) == {"extra": {TAG: "date", "v": "2020-01-01"}}


@pytest.mark.parametrize("offset", [timedelta(microseconds=1), -timedelta(hours=3, seconds=7, microseconds=9),
                                    timedelta(hours=5, minutes=30), timedelta(seconds=59)])
def test_a_utc_offset_comes_back_to_the_microsecond(offset: timedelta) -> None:
    """Python 3.11's fromisoformat reads ``+00:00:00.000001`` as UTC (found by hypothesis in CI)."""
    value = datetime(2000, 1, 1, 12, tzinfo=timezone(offset))
    back = codec.loads(codec.dumps(value))
    assert back == value and back.utcoffset() == offset


def test_timedelta_beyond_float_precision_comes_back_exactly() -> None:
    for value in (timedelta(days=999_999_999, hours=23, microseconds=999_999), timedelta(days=99_421, microseconds=1),
                  timedelta.max, timedelta.min, timedelta(microseconds=-1)):
        assert round_trip(value) == value


# -- refusals ---------------------------------------------------------------------------
@pytest.mark.parametrize("key, kind", [(1, "int"), (1.5, "float"), (True, "bool"), (None, "NoneType"),
                                       ((1, 2), "tuple")])
def test_non_string_dict_keys_are_refused(key: Any, kind: str) -> None:
    with pytest.raises(SerializationError) as info:
        codec.dumps({"ok": [1, {key: "a"}]}, what="arguments of step 'x'")
    assert str(info.value) == f"dict keys must be strings; found key {key!r} ({kind}) in arguments of step 'x'"


def test_int_and_str_keys_that_would_collide_are_refused() -> None:
    with pytest.raises(SerializationError, match=r"found key 1 \(int\) in payload"):
        codec.dumps({1: "a", "1": "b"}, what="payload")


def test_non_string_key_inside_a_tuple_or_under_a_tag_shaped_dict_is_refused() -> None:
    for value in [(1, ({2: 3},)), {TAG: "dict", "v": {2: 3}}]:
        with pytest.raises(SerializationError, match=r"found key 2 \(int\) in value"):
            codec.dumps(value)


def test_a_pydantic_model_is_sent_in_its_json_form() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Model(pydantic.BaseModel):
        field: Any
        when: date

    # pydantic's JSON mode turns keys and dates into strings itself; the codec sends what it gives
    assert round_trip(Model(field={1: "a"}, when=date(2020, 1, 2))) == {"field": {"1": "a"}, "when": "2020-01-02"}


def _deep(depth: int) -> Any:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


@pytest.mark.parametrize("depth", ["limit+1", 10_000, 100_000])
def test_very_deep_nesting_is_a_serialization_error(depth: Any) -> None:
    depth = codec.MAX_DEPTH if depth == "limit+1" else depth  # _deep(n) is n + 1 lists
    with pytest.raises(SerializationError, match="^deep is nested too deeply to be JSON data$"):
        codec.dumps(_deep(depth), what="deep")
    with pytest.raises(SerializationError, match="^deep is nested too deeply to be JSON data$"):
        codec.dumps({"a": [{"b": _deep(depth)}]}, what="deep")


def test_nesting_up_to_the_limit_round_trips() -> None:
    value = _deep(codec.MAX_DEPTH - 1)
    assert round_trip(value) == value
    value = {"a": [{"b": _deep(codec.MAX_DEPTH - 4)}]}
    assert round_trip(value) == value


def test_a_cycle_is_still_refused_as_a_cycle() -> None:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    for value in (loop, {"x": loop}, [{"k": [loop]}]):
        with pytest.raises(SerializationError, match="^cyc is not JSON data: Circular reference detected$"):
            codec.dumps(value, what="cyc")
    shared: Any = []
    for _ in range(2000):  # a deep DAG, not a cycle: its check must not walk it exponentially
        shared = [shared, shared]
    with pytest.raises(SerializationError, match="nested too deeply"):
        codec.dumps(shared, what="dag")


def test_sets_objects_and_nan_are_still_refused() -> None:
    for value, message in [({1}, "a set is not JSON data"), (object(), "type object is not JSON data"),
                           (float("nan"), "not JSON data")]:
        with pytest.raises(SerializationError, match=message):
            codec.dumps([value], what="thing")


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


def test_plain_data_is_encoded_as_before() -> None:
    value = [{"id": 1, "name": "a", "tags": ["x", "y"], "score": 1.5, "ok": True, "none": None}, (1, 2)]
    assert codec.dumps(value) == json.dumps(value, separators=(",", ":"))
    assert codec.dumps(date(2020, 1, 2)) == '{"__wf__":"date","v":"2020-01-02"}'


def test_tuples_come_back_as_lists() -> None:
    assert round_trip((1, (2, {"a": (3,)}))) == [1, [2, {"a": [3]}]]


def test_timedelta_is_encoded_as_seconds_when_they_hold_it_exactly() -> None:
    assert codec.dumps(timedelta(seconds=90)) == '{"__wf__":"timedelta","v":90.0}'
    assert codec.dumps(timedelta(days=999_999_999)) == '{"__wf__":"timedelta","v":86399999913600.0}'
    assert codec.dumps(timedelta.max) == '{"__wf__":"timedelta","v":[999999999,86399,999999]}'
