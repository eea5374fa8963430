"""Skews this process's wall clock by ``WORKFLOWS_SOAK_CLOCK_SKEW`` seconds (the soak's own hook).

The soak puts this directory first on ``PYTHONPATH`` of the one process per role it runs with a
skewed clock; Python imports ``sitecustomize`` at start-up, before any module reads the time, so
``time.time()`` (the engine's clock) and ``time.time_ns()`` read ahead or behind by the offset.
``time.monotonic()`` and ``time.clock_gettime(CLOCK_REALTIME)`` stay true: the ledger uses the latter.
"""

from __future__ import annotations

import os
import time


def skew_clock(offset: float) -> None:
    """Make ``time.time`` and ``time.time_ns`` read ``offset`` seconds off."""
    real_time, real_time_ns = time.time, time.time_ns
    nanoseconds = int(offset * 1e9)
    time.time = lambda: real_time() + offset
    time.time_ns = lambda: real_time_ns() + nanoseconds


_offset = float(os.environ.get("WORKFLOWS_SOAK_CLOCK_SKEW") or 0.0)
if _offset:
    skew_clock(_offset)
