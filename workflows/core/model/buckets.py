"""The token-bucket rule every Store applies the same way (see ``FlowStore.take_token``)."""

from __future__ import annotations

import hashlib

#: The slot number (sort key) of a limit's rate bucket item (concurrency slots are 0..capacity-1).
BUCKET_SLOT_NUMBER = -1
#: Conditional writes a taker tries before it reports the bucket as busy.
TOKEN_ATTEMPTS = 8
#: The share of a token that may be missing when a token counts as there.
TOKEN_TOLERANCE = 1e-4
#: Places a waiter of a workflow's queue tries after its own (two runs started in one microsecond).
QUEUE_PROBES = 16


def refill(stored: tuple[float | None, float | None] | None, now: float, rate: float,
           burst: float) -> tuple[float, float]:
    """The tokens of a bucket at ``now`` and the time they are counted from.

    ``stored``: the bucket's (tokens, time) as written, or None for a new (full) bucket. The
    time never goes back, so a taker whose clock is behind another's never refills twice.
    """
    if stored is None or stored[0] is None or stored[1] is None:
        return burst, now
    tokens, at = float(stored[0]), float(stored[1])
    later = max(now, at)
    return min(burst, tokens + (later - at) * rate), later


def wait_for_token(tokens: float, rate: float) -> float:
    """Seconds until a bucket holding ``tokens`` has one (0.0: take it now). A ten-thousandth of
    a token counts as none missing: epoch seconds as floats (and as stored) are that coarse."""
    return 0.0 if tokens >= 1 - TOKEN_TOLERANCE else (1 - tokens) / rate


def reservation_slot_number(holder: str) -> int:
    """The slot number (sort key) of ``holder``'s reservation in a bucket's partition: below the
    bucket's -1, from 48 bits of a hash of the holder (two waiters of one bucket never meet in practice)."""
    return -2 - int.from_bytes(hashlib.sha256(holder.encode()).digest()[:6], "big")

