"""py-spy recordings of worker processes while a scenario runs, and their hottest frames."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def record(py_spy: Path, pids: list[int], out: Path, rate: int = 200, idle: bool = False) -> Iterator[None]:
    """Sample ``pids`` (their threads and child processes: a prefork pool) with py-spy into collapsed-stack
    files ``out``-PID.txt; with ``idle``, waiting threads are sampled too (where a run waits)."""
    extra = ["--subprocesses"] + (["--idle"] if idle else [])
    procs = [subprocess.Popen([str(py_spy), "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                               "--nonblocking", *extra, "--output", f"{out}-{pid}.txt"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for pid in pids]
    try:
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


IDLE = ("wait (threading", "poll (kombu", "_epoll.poll", "select (", "sleep (", "_wait_for_tstate_lock")
PROJECT = ("(workflows/", "(persistence/", "(beat/")
MAIN = ("(workflows/cli/commands.py", "(workflows/__main__.py")  # the worker's main thread: Celery's consumer loop


def breakdown(path: Path, limit: int = 10) -> list[str]:
    """Busy samples (idle waits dropped) by the innermost frame of this project's code, most first.

    A sample whose stack holds no project frame is counted as ``outside the engine``
    (Celery's consumer loop, kombu's SQS client, acknowledgements).
    """
    frames: Counter[str] = Counter()
    busy = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        stack_frames = stack.split(";")
        if any(mark in stack_frames[-1] for mark in IDLE):
            continue
        busy += int(count)
        ours = [f for f in stack_frames if any(p in f for p in PROJECT) and not any(m in f for m in MAIN)]
        frames[ours[-1] if ours else "outside the engine (Celery/kombu consumer, acks)"] += int(count)
    return [f"{100 * n / busy:5.1f}%  {frame}" for frame, n in frames.most_common(limit)] if busy else []


#: Innermost frames of a thread waiting for a response on its socket (botocore's HTTP round trip).
RESPONSE_WAIT = ("recv_into (", "readinto (", "_read_status (", "readline (", "recv (")


def waits(path: Path, limit: int = 10) -> list[str]:
    """Samples of threads running this project's code (a recording made with ``--idle``), by the innermost
    project frame and whether the thread was waiting for an AWS response or running: where a run's time goes.
    Threads parked on a lock or a sleep (background loops between their rounds) are left out.
    """
    frames: Counter[str] = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        stack_frames = stack.split(";")
        ours = [f for f in stack_frames if any(p in f for p in PROJECT) and not any(m in f for m in MAIN)]
        if not ours:
            continue
        if any(mark in stack_frames[-1] for mark in IDLE):
            continue  # a thread parked on a lock or a sleep: the worker's heartbeat and visibility loops
        kind = "waits for AWS" if any(mark in stack_frames[-1] for mark in RESPONSE_WAIT) else "runs"
        total += int(count)
        frames[f"{kind}: {ours[-1]}"] += int(count)
    return [f"{100 * n / total:5.1f}%  {frame}" for frame, n in frames.most_common(limit)] if total else []
