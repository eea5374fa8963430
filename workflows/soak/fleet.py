"""The soak's processes: the local AWS server, workers, beat and the hook endpoint.

Every process runs in a session of its own, so its process group is its own id: the ledger
names the group a step body ran in, which for a prefork child is its worker's id. A kill is
``SIGKILL`` to the process by its id, then to each of its children by theirs (a prefork pool's
children would otherwise run on, orphaned), as a host's crash would take them all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .ledger import true_time


@dataclass
class Member:
    """One process of the fleet, restarted under the same name after a kill."""

    name: str
    role: str
    args: list[str]
    env: dict[str, str]
    log: Path
    skew: float = 0.0
    popen: subprocess.Popen[bytes] | None = None
    pids: list[int] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        """Whether its current process runs."""
        return self.popen is not None and self.popen.poll() is None

    def output(self) -> str:
        """Its log so far (every incarnation's)."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass(frozen=True)
class Kill:
    """A kill the chaos made: who, which process, when (true time)."""

    name: str
    role: str
    pid: int
    at: float


@dataclass(frozen=True)
class Exit:
    """A process that ended by itself, which the soak did not kill."""

    name: str
    pid: int
    code: int
    at: float


def children(pid: int) -> list[int]:
    """The ids of a process's children (``/proc``), empty if it is gone."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(p) for p in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def signal_pid(pid: int, sig: int) -> None:
    """Send ``sig`` to one process by its id; a process already gone is no error."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


class Fleet:
    """Starts, kills, restarts and stops the soak's processes."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.members: dict[str, Member] = {}
        self.kills: list[Kill] = []
        self.exits: list[Exit] = []
        self.killed_groups: dict[int, float] = {}  # process group (= worker pid) -> when it was killed

    def add(self, member: Member) -> Member:
        """Register a member (not started)."""
        self.members[member.name] = member
        return member

    def start(self, member: Member) -> Member:
        """Start a member's process (appending to its log)."""
        with member.log.open("ab") as log:
            member.popen = subprocess.Popen([sys.executable, "-m", "workflows", *member.args], env=member.env,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            cwd=self.cwd)
        member.pids.append(member.popen.pid)
        return member

    def kill(self, member: Member) -> Kill | None:
        """``SIGKILL`` a member's process, then its children, each by its id."""
        if member.popen is None or not member.alive:
            return None
        pid = member.popen.pid
        kids = children(pid)
        signal_pid(pid, signal.SIGKILL)
        for kid in kids:
            signal_pid(kid, signal.SIGKILL)
        member.popen.wait()
        kill = Kill(member.name, member.role, pid, true_time())
        self.kills.append(kill)
        self.killed_groups[pid] = kill.at
        return kill

    def reap(self) -> list[Exit]:
        """Members whose process ended by itself since the last look; each is started again."""
        found = []
        for member in self.members.values():
            if member.popen is not None and member.popen.poll() is not None:
                found.append(Exit(member.name, member.popen.pid, member.popen.returncode, true_time()))
                for kid in children(member.popen.pid):
                    signal_pid(kid, signal.SIGKILL)
                self.start(member)
        self.exits += found
        return found

    def stop_all(self, grace: float = 5.0, server: bool = True) -> None:
        """``SIGTERM`` every member at once (the AWS server after the others, unless ``server`` is
        false), ``SIGKILL`` what is left after ``grace`` seconds, and every child of theirs."""
        for last in (False, True) if server else (False,):
            members = [m for m in self.members.values() if (m.role == "aws") == last and m.popen is not None]
            kids = {m.name: children(m.popen.pid) for m in members if m.popen is not None}
            for member in members:
                if member.alive and member.popen is not None:
                    signal_pid(member.popen.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            for member in members:
                assert member.popen is not None
                try:
                    member.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    signal_pid(member.popen.pid, signal.SIGKILL)
                    member.popen.wait()
                for kid in kids[member.name]:
                    signal_pid(kid, signal.SIGKILL)


def wait_until(ready: Callable[[], bool], timeout: float, what: str, member: Member | None = None) -> None:
    """Poll ``ready()`` until true; a member that exits meanwhile, or the timeout, raises."""
    deadline = time.monotonic() + timeout
    while not ready():
        if member is not None and member.popen is not None and member.popen.poll() is not None:
            raise RuntimeError(f"{member.name} exited while waiting for {what}:\n{member.output()[-3000:]}")
        if time.monotonic() > deadline:
            tail = member.output()[-3000:] if member else ""
            raise RuntimeError(f"timed out waiting for {what}\n{tail}")
        time.sleep(0.2)


def answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status)."""
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
