"""Stopping the processes a test started: a signal to each, then a wait (killed past it)."""

from __future__ import annotations

import signal
import subprocess
from typing import Any, Iterable


def stop(procs: Iterable[subprocess.Popen[Any]], sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Send ``sig`` to each live process, then wait for all (kill one that outlives ``timeout``)."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(sig)
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
