"""Durations: ``"90s"``, ``"2h"``, ``"1d12h"``, seconds, or a ``timedelta``."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Union

from .errors import InvalidDuration

Duration = Union[int, float, str, timedelta]

# Longer is a mistake, and would overflow datetimes and DynamoDB numbers further down.
MAX_SECONDS = 100 * 365 * 86400.0

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def to_seconds(value: Duration, *, what: str = "duration", allow_zero: bool = True) -> float:
    """Return ``value`` in seconds (fractions kept).

    Raises:
        InvalidDuration: the value is negative, not finite, over 100 years, or not understood.
    """
    if isinstance(value, bool):
        raise InvalidDuration(f"{what} must be a duration, got {value!r}")
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse(value.strip().lower(), what)
    else:
        raise InvalidDuration(f"{what} must be seconds, a string like '90s' or a timedelta, got {type(value).__name__}")
    if not math.isfinite(seconds):
        raise InvalidDuration(f"{what} must be a finite number of seconds, got {value!r}")
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise InvalidDuration(f"{what} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    if seconds > MAX_SECONDS:
        raise InvalidDuration(f"{what} must be at most 100 years ({MAX_SECONDS:.0f}s), got {value!r}")
    return seconds


def _parse(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise InvalidDuration(f"{what} {text!r} is not a duration like '90s', '10m', '2h', '1d'")
    return total
