"""JSON on the wire and in storage: plain data, pydantic models and datetimes.

What comes back from ``loads(dumps(value))``:

* JSON data (``None``, bools, ints, floats, strings, lists, dicts with string keys),
  ``datetime``, ``date`` and ``timedelta`` values come back exactly, at any place in
  the structure. An aware ``datetime`` comes back with a fixed UTC offset.
* A tuple comes back as a list, as JSON has no tuples.
* A pydantic model is encoded as ``model_dump(mode="json")`` and comes back as that
  dict (pydantic turns its own dict keys into strings).

Everything else is refused with a :class:`SerializationError` naming the value:
objects of other types, sets, NaN and infinities, strings holding a lone surrogate
(``"\\ud800"`` is valid JSON but no text: UTF-8 cannot encode it), dicts with a key that is not a
string (JSON would turn ``1`` into ``"1"``, so ``{1: "a"}`` would come back changed
and ``{1: "a", "1": "b"}`` would lose a value), nesting deeper than
:data:`MAX_DEPTH` containers, and cycles.

The encoding is compact JSON. Values that JSON lacks are tagged dicts:
``{"__wf__": "datetime" | "date", "v": <ISO 8601 text>}`` and
``{"__wf__": "timedelta", "v": <seconds>}`` (``[days, seconds, microseconds]`` for
a timedelta that a float of seconds would not hold exactly). A dict of the caller's
that has a ``"__wf__"`` key is escaped as ``{"__wf__": "dict", "v": [[key, value],
...]}``, so it can never be read as a tag; its items are a list of pairs because a
decoder sees inner dicts before outer ones. Every other dict is written as is.

Decoding never imports or calls anything a payload names: a tagged value is only
ever turned into a ``datetime``, ``date``, ``timedelta`` or dict, and a dict that is
not a well-formed tag stays the dict it is (as it did before the escape existed).
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

from .errors import PayloadTooLarge, SerializationError

_TAG = "__wf__"
TAG = _TAG
"""The key of a tagged dict (public: ``core/storage/payloads.py`` tags references with it)."""

MAX_DEPTH = 500
"""The deepest nesting of lists and dicts accepted: well inside Python's recursion
limit, so a value accepted here also decodes in a worker's deeper stack."""

_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})


class _BadKey(Exception):
    def __init__(self, key: Any) -> None:
        super().__init__(key)
        self.key = key


class _TooDeep(Exception):
    pass


def _scan(value: dict[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> bool:
    """Check the keys of every dict in ``value``; return whether a dict has the tag key.

    Visits dicts, lists and tuples only (json.dumps does not call ``default`` for them).
    """
    if depth > MAX_DEPTH:
        raise _TooDeep
    tagged = False
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                raise _BadKey(key)
            if type(item) not in _SCALARS and isinstance(item, _CONTAINERS) and _scan(item, depth + 1):
                tagged = True
        return tagged or _TAG in value
    for item in value:
        if type(item) not in _SCALARS and isinstance(item, _CONTAINERS) and _scan(item, depth + 1):
            tagged = True
    return tagged


def _escape(value: Any) -> Any:
    """A copy of ``value`` in which every dict with the tag key is escaped (after a scan found one)."""
    if isinstance(value, dict):
        items = {key: _escape(item) for key, item in value.items()}
        return {_TAG: "dict", "v": [[key, item] for key, item in items.items()]} if _TAG in items else items
    if isinstance(value, (list, tuple)):
        return [_escape(item) for item in value]
    return value


def _has_cycle(value: Any) -> bool:
    """Whether ``value`` contains itself (only asked once nesting passed ``MAX_DEPTH``)."""
    path: set[int] = set()
    done: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            path.discard(id(node))
            done.add(id(node))
            continue
        if id(node) in path:
            return True
        if id(node) in done:
            continue
        path.add(id(node))
        stack.append((node, True))
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, False) for child in children if isinstance(child, _CONTAINERS))
    return False


def _plain(value: Any) -> Any:
    """``value`` ready for json.dumps: keys checked, tag-keyed dicts escaped."""
    if type(value) not in _SCALARS and isinstance(value, _CONTAINERS) and _scan(value, 1):
        return _escape(value)
    return value


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return {_TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, date):
        return {_TAG: "date", "v": value.isoformat()}
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        try:
            if timedelta(seconds=seconds) == value:
                return {_TAG: "timedelta", "v": seconds}
        except OverflowError:  # rounded past timedelta.max
            pass
        # over about 285 years a float of seconds loses microseconds
        return {_TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        return _plain(dump(mode="json"))
    if isinstance(value, (set, frozenset)):
        raise SerializationError("a set is not JSON data; pass a list")
    raise SerializationError(f"a value of type {type(value).__name__} is not JSON data")


def _pairs(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) for pair in value)


#: A UTC offset with seconds and microseconds, which ``datetime.fromisoformat`` of Python
#: 3.11 drops (it reads ``+00:00:00.000001`` as UTC).
_FINE_OFFSET = re.compile(r"([+-])(\d\d):(\d\d):(\d\d)(?:\.(\d{6}))?$")


def _datetime(text: str) -> datetime:
    """A datetime from ``isoformat()`` text, its UTC offset kept to the microsecond."""
    fine = _FINE_OFFSET.search(text) if isinstance(text, str) and "T" in text else None
    if fine is None:
        return datetime.fromisoformat(text)
    sign, hours, minutes, seconds, micros = fine.groups()
    offset = timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds), microseconds=int(micros or 0))
    naive = datetime.fromisoformat(text[:fine.start()])
    return naive.replace(tzinfo=timezone(-offset if sign == "-" else offset))


def _hook(obj: dict[str, Any]) -> Any:
    kind = obj.get(_TAG)
    if kind is None or len(obj) != 2 or "v" not in obj:
        return obj
    value = obj["v"]
    try:
        if kind == "datetime":
            return _datetime(value)
        if kind == "date":
            return date.fromisoformat(value)
        if kind == "timedelta":
            if isinstance(value, list):
                if len(value) == 3 and all(type(part) is int for part in value):
                    return timedelta(days=value[0], seconds=value[1], microseconds=value[2])
                return obj
            return timedelta(seconds=float(value))
        if kind == "dict" and _pairs(value):
            return dict(value)
    except (TypeError, ValueError, OverflowError):
        return obj
    return obj


def _key_text(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


def dumps(value: Any, *, what: str = "value", limit: int | None = None) -> str:
    """Encode ``value`` as compact JSON text (see the module docstring for what round-trips).

    Raises:
        SerializationError: the value is not JSON data (names ``what``): an object of
            another type, a set, NaN or infinity, a dict key that is not a string,
            nesting deeper than ``MAX_DEPTH``, a cycle, or a string holding a lone surrogate
            (not text: UTF-8 cannot encode it).
        PayloadTooLarge: the encoding is longer than ``limit`` bytes.
    """
    try:
        text = json.dumps(_plain(value), default=_default, separators=(",", ":"), allow_nan=False)
    except _BadKey as exc:
        raise SerializationError(
            f"dict keys must be strings; found key {_key_text(exc.key)} ({type(exc.key).__name__}) in {what}"
        ) from None
    except (_TooDeep, RecursionError):
        if _has_cycle(value):
            raise SerializationError(f"{what} is not JSON data: Circular reference detected") from None
        raise SerializationError(f"{what} is nested too deeply to be JSON data") from None
    except SerializationError as exc:
        raise SerializationError(f"{what}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"{what} is not JSON data: {exc}") from None
    if "\\ud" in text:  # a character past U+FFFF, or a lone surrogate: only the first is text
        _check_text(value, what)
    if limit is not None:
        size = len(text.encode())
        if size > limit:
            raise PayloadTooLarge(what, size, limit)
    return text


def _check_text(value: Any, what: str) -> None:
    """Refuse a value holding a lone surrogate (valid JSON escapes, but no text: UTF-8 cannot encode
    it, so no page, log or terminal could show it)."""
    try:
        json.dumps(_plain(value), default=_default, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end]
        raise SerializationError(f"{what} is not valid text: it holds a lone surrogate "
                                 f"({bad.encode('utf-8', 'backslashreplace').decode()}), which UTF-8 cannot "
                                 "encode") from None


def printable(value: Any) -> Any:
    """``value`` with any lone surrogate of a string shown as its escape (``\\ud800``), so a page or a
    terminal can show what an older version stored; anything else as it is."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # the same type (a template's safe markup stays safe), escaped
        return type(value)(value.encode("utf-8", "backslashreplace").decode("utf-8"))
    return value  # as it is: text, or a template's safe markup


def loads(text: str | None) -> Any:
    """Decode JSON text made by :func:`dumps` (``None`` stays ``None``)."""
    if text is None:
        return None
    return _DECODER.decode(text)


_DECODER = json.JSONDecoder(object_hook=_hook)  # one for all: json.loads with a hook builds one per call
