"""The soak's ledger: one line per step body's start and end, kept outside the project's stores.

Every step body of :mod:`workflows.soak.flows` runs inside :func:`executing`, which appends a
start line before the body and an end line after it to the file ``WORKFLOWS_SOAK_LEDGER`` names
(``O_APPEND``, one ``write`` per line, so lines of concurrent processes never interleave). A line
is JSON: the run, the op position, the step's key in its run, the attempt, a unique execution id,
the process and its worker's process group, the Celery task, and the true wall time (the soak
skews some processes' ``time.time``; the ledger reads ``CLOCK_REALTIME`` itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..core.execution.attempts import current_step

LEDGER_ENV = "WORKFLOWS_SOAK_LEDGER"


def true_time() -> float:
    """The wall clock, never skewed (the soak's skew patches ``time.time`` only)."""
    return time.clock_gettime(time.CLOCK_REALTIME)


def append(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line to ``path`` with a single ``O_APPEND`` write."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
    finally:
        os.close(fd)


def _task_id() -> str | None:
    """The Celery task this body runs in (None in a thread of its own, or outside a worker)."""
    try:
        from celery import current_task
    except ImportError:  # pragma: no cover - the workers have Celery
        return None
    request = getattr(current_task, "request", None)
    return getattr(request, "id", None)


@dataclass(frozen=True)
class Execution:
    """One execution of a step body, as its start line says."""

    run: str
    pos: int
    key: str
    attempt: int
    exec_id: str
    pid: int
    group: int
    task: str | None
    started: float
    ended: float | None = None
    outcome: str | None = None


@contextlib.contextmanager
def executing(key: str) -> Iterator[Execution]:
    """Note the start and the end of the step body running in this thread as ``key``."""
    info = current_step()
    path = os.environ.get(LEDGER_ENV)
    run, pos, attempt = (info.run_id, info.pos, info.attempt) if info else ("", -1, 0)
    execution = Execution(run, pos, key, attempt, uuid.uuid4().hex, os.getpid(), os.getpgid(0), _task_id(),
                          true_time())
    if path:
        append(Path(path), {"e": "S", "run": run, "pos": pos, "key": key, "attempt": attempt,
                            "exec": execution.exec_id, "pid": execution.pid, "group": execution.group,
                            "task": execution.task, "at": execution.started})
    outcome = "raised"
    try:
        yield execution
        outcome = "returned"
    finally:
        if path:
            append(Path(path), {"e": "E", "exec": execution.exec_id, "at": true_time(), "outcome": outcome})


def read_ledger(path: Path) -> list[Execution]:
    """Every execution the ledger at ``path`` holds, its end joined to its start."""
    starts: dict[str, dict[str, Any]] = {}
    ends: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            (starts if row["e"] == "S" else ends)[row["exec"]] = row
    out = []
    for exec_id, row in starts.items():
        end = ends.get(exec_id, {})
        out.append(Execution(row["run"], row["pos"], row["key"], row["attempt"], exec_id, row["pid"], row["group"],
                             row["task"], row["at"], end.get("at"), end.get("outcome")))
    return sorted(out, key=lambda e: e.started)
