"""The bench's process handling: CPU of a process tree (prefork pools), pausing a system (bench/stack.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from bench.stack import Cluster, cpu_seconds, descendants, tree_cpu_seconds

pytestmark = pytest.mark.e2e

BURN_THEN_SLEEP = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(30)"


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def stop(cluster: Cluster, children: list[int]) -> None:
    """Stop the cluster, then the children it started (plain processes do not end their children)."""
    cluster.stop()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_parents_cpu_counts_its_childrens(tmp_path: Path) -> None:
    """A prefork worker's tasks run in its children: their CPU is the worker's."""
    cluster = Cluster(tmp_path)
    code = (f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {BURN_THEN_SLEEP!r}])\n"
            "time.sleep(30)")
    proc = cluster.start("parent", [sys.executable, "-c", code], {})
    children: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while tree_cpu_seconds(proc.popen.pid) - cpu_seconds(proc.popen.pid) < 0.25:
            assert time.monotonic() < deadline, "the child's CPU never showed in the tree's"
            time.sleep(0.1)
        children = descendants(proc.popen.pid)
        assert len(children) == 1
    finally:
        stop(cluster, children or descendants(proc.popen.pid))


def test_a_paused_system_is_stopped_with_its_children_until_resumed(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    code = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n" \
           "time.sleep(30)"
    proc = cluster.start("parent", [sys.executable, "-c", code], {})
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not descendants(proc.popen.pid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pids = [proc.popen.pid, *descendants(proc.popen.pid)]
        cluster.pause()
        time.sleep(0.2)
        assert [state(p) for p in pids] == ["T", "T"]
        cluster.resume()
        time.sleep(0.2)
        assert [state(p) for p in pids] == ["S", "S"]
        cluster.pause()
    finally:
        stop(cluster, pids[1:])  # a paused process is resumed so that SIGTERM ends it
    assert not proc.alive()
