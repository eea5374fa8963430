"""JSON on the wire and in storage: plain data, pydantic models and datetimes.

Decoding never imports or calls anything a payload names: a tagged value is
only ever turned into a ``datetime``, ``date`` or ``timedelta``; every other
dict stays a dict.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from typing import Any

from .errors import PayloadTooLarge, SerializationError

_TAG = "__wf__"


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
        return dump(mode="json")
    if isinstance(value, (set, frozenset)):
        raise SerializationError("a set is not JSON data; pass a list")
    raise SerializationError(f"a value of type {type(value).__name__} is not JSON data")


def _hook(obj: dict[str, Any]) -> Any:
    kind = obj.get(_TAG)
    if kind is None or len(obj) != 2 or "v" not in obj:
        return obj
    value = obj["v"]
    try:
        if kind == "datetime":
            return datetime.fromisoformat(value)
        if kind == "date":
            return date.fromisoformat(value)
        if kind == "timedelta":
            if isinstance(value, list):
                if len(value) == 3 and all(type(part) is int for part in value):
                    return timedelta(days=value[0], seconds=value[1], microseconds=value[2])
                return obj
            return timedelta(seconds=float(value))
    except (TypeError, ValueError, OverflowError):
        return obj
    return obj


def dumps(value: Any, *, what: str = "value", limit: int | None = None) -> str:
    """Encode ``value`` as JSON text.

    Raises:
        SerializationError: the value is not JSON data (names ``what``).
        PayloadTooLarge: the encoding is longer than ``limit`` bytes.
    """
    try:
        text = json.dumps(value, default=_default, separators=(",", ":"), allow_nan=False)
    except SerializationError as exc:
        raise SerializationError(f"{what}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"{what} is not JSON data: {exc}") from None
    except RecursionError:
        raise SerializationError(f"{what} is nested too deeply to be JSON data") from None
    if limit is not None:
        size = len(text.encode())
        if size > limit:
            raise PayloadTooLarge(what, size, limit)
    return text


def loads(text: str | None) -> Any:
    """Decode JSON text made by :func:`dumps` (``None`` stays ``None``)."""
    if text is None:
        return None
    return json.loads(text, object_hook=_hook)
