"""Real worker and beat processes against the session's local AWS server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Proc:
    """A `workflows` subprocess (worker or beat) killable by its own PID."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.handle = open(log, "ab")
        self.popen = subprocess.Popen([sys.executable, "-m", "workflows", *args], cwd=ROOT, env=env,
                                      stdout=self.handle, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self.handle.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="session")
def proc_env(settings, aws_env) -> dict[str, str]:  # type: ignore[no-untyped-def]
    counters = tempfile.mkdtemp(prefix="wf-counters-")
    os.environ["WORKFLOWS_TEST_COUNTERS"] = counters
    return {**os.environ, **aws_env, "WORKFLOWS_TEST_COUNTERS": counters, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="session")
def spawn(proc_env, tmp_path_factory) -> Iterator:  # type: ignore[no-untyped-def]
    """Start `workflows worker` / `workflows beat` processes; all are stopped at session end."""
    procs: list[Proc] = []
    logs = tmp_path_factory.mktemp("procs")

    def start(kind: str, *extra: str, env: dict[str, str] | None = None) -> Proc:
        args = [kind, *extra] if kind == "beat" else [kind, "--loglevel", "INFO", "-c", "4", *extra]
        proc = Proc(args, {**proc_env, **(env or {})}, logs / f"{kind}-{len(procs)}.log")
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill(signal.SIGTERM)


@pytest.fixture(scope="session")
def cluster(spawn):  # type: ignore[no-untyped-def]
    """One worker and one beat for the whole session."""
    # Queue "crashy" is left to the workers that the crash tests start and kill.
    worker = spawn("worker", "-Q", "workflows,steps,payments")
    beat = spawn("beat")
    time.sleep(2)
    assert worker.popen.poll() is None, worker.output()
    assert beat.popen.poll() is None, beat.output()
    return {"worker": worker, "beat": beat}
