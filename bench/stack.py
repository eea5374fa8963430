"""The local stack of a benchmark run: the counting AWS front and real worker processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

from workflows.local.server import free_port

ROOT = Path(__file__).resolve().parents[1]
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process (all its threads) has used so far; 0 if it is gone."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0


def descendants(pid: int) -> list[int]:
    """``pid``'s live child processes, their children, and so on (a prefork worker's pool)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its live descendants: a prefork worker's children run the tasks,
    and a parent's own figure counts none of them until they exit and are reaped."""
    return sum(cpu_seconds(p) for p in (pid, *descendants(pid)))


def client_cpu_seconds() -> float:
    """CPU seconds of this process plus its finished children (the peer's driver runs as one)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class Proc:
    """A subprocess with its output in a log file, stopped by its own PID."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logdir: Path) -> None:
        self.name = name
        self.log = logdir / f"{name}.log"
        self._out = open(self.log, "ab")
        self.popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=self._out, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def cpu(self) -> float:
        """CPU seconds used so far by the process and its children (a prefork pool)."""
        return tree_cpu_seconds(self.popen.pid)

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the process's own group (it leads one: its prefork children are in it)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signum)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 30) -> str:
        """The end of the process's log."""
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (this process only; resumed first if paused)."""
        if self.alive():
            self.signal_group(signal.SIGCONT)
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._out.close()


class Front:
    """The counting front (moto behind :mod:`bench.proxy`) in its own process."""

    def __init__(self, logdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = Proc("aws", [sys.executable, "-m", "bench.proxy", "--port", str(self.port)],
                         {**os.environ, "PYTHONPATH": str(ROOT)}, logdir)
        self._latency: dict[str, float] = {}
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/__bench/counts", timeout=2).close()
                return
            except (urllib.error.URLError, OSError):
                if not self.proc.alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the counting AWS front did not start:\n{self.proc.tail()}") from None
                time.sleep(0.1)

    def set_latency(self, table_ms: dict[str, float]) -> None:
        """Make the front add ``table_ms`` per operation from now on (``{}``: none); no request if unchanged."""
        if table_ms != self._latency:
            from .proxy import set_latency

            set_latency(self.url, table_ms)
            self._latency = dict(table_ms)

    def clear(self, prefix: str, names: tuple[str, ...]) -> dict[str, int]:
        """Empty the tables ``<prefix>-<name>``; return how many items each held."""
        from .proxy import clear_tables

        return clear_tables(self.url, [f"{prefix}-{name}" for name in names]) if names else {}

    def env(self, role: str) -> dict[str, str]:
        """Environment of a process of ``role`` (client, worker, beat) pointed at this front."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.url, "AWS_ENDPOINT_URL_DYNAMODB": self.url,
                "AWS_ENDPOINT_URL_SQS": self.url, "AWS_SDK_UA_APP_ID": role}

    def stop(self) -> None:
        self.proc.stop(grace=5)


class Cluster:
    """The worker (and beat) processes of one system, started and stopped together."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.procs: list[Proc] = []

    def start(self, name: str, argv: list[str], env: dict[str, Any]) -> Proc:
        proc = Proc(name, argv, {**os.environ, "PYTHONPATH": str(ROOT), **env}, self.logdir)
        self.procs.append(proc)
        return proc

    def check(self) -> None:
        """Raise if a process died."""
        for proc in self.procs:
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}")

    def cpu(self) -> float:
        """CPU seconds used so far by every process of the system (and its children)."""
        return sum(p.cpu() for p in self.procs)

    def pause(self) -> None:
        """Freeze every process (SIGSTOP to each group): an idle system then sends no long poll and
        no beat sweep, so it neither loads the shared AWS front nor takes another system's messages."""
        for proc in self.procs:
            proc.signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        """Let paused processes run again (SIGCONT)."""
        for proc in self.procs:
            proc.signal_group(signal.SIGCONT)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs.clear()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def store_on_front(name: str, table_prefix: str) -> Iterator[tuple[Front, Any]]:
    """A counting front (in a temporary folder), this process's AWS settings pointed at it, the
    tables made under ``table_prefix`` and a DynamoDB store over them; the front stops after."""
    front = Front(Path(tempfile.mkdtemp(prefix=f"bench-{name}-")))
    try:
        os.environ.update(front.env("client"))
        os.environ.update(CREDENTIALS)
        from persistence import DynamoStore
        from persistence.provision import create_tables
        from workflows.settings import Settings

        settings = Settings.from_env().with_(table_prefix=table_prefix)
        create_tables(settings)
        yield front, DynamoStore(settings)
    finally:
        front.stop()
