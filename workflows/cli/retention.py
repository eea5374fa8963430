"""``workflows retention``: beat's retention work, run now by an operator (docs/retention.md)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from typing import Any, Callable, Iterator

#: The logger whose errors are a run the pass could not serve (it logs them and goes on, as beat does).
RETENTION_LOG = "workflows.retention"


class _Failures(logging.Handler):
    """Counts the errors logged while a command runs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


@contextlib.contextmanager
def _counting_failures() -> Iterator[_Failures]:
    failures, log = _Failures(), logging.getLogger(RETENTION_LOG)
    log.addHandler(failures)
    try:
        yield failures
    finally:
        log.removeHandler(failures)


def _outcome(done: str, failures: _Failures) -> int:
    """Print what was done; exit 1 when something failed (beat would have retried it later)."""
    print(done)
    if failures.count:
        print(f"error: {failures.count} failure(s) logged above (permissions? throttling?); run the command "
              "again once they are fixed", file=sys.stderr)
        return 1
    return 0


def cmd_retention_keep_alive(args: argparse.Namespace) -> int:
    from ..core.storage.retention import KeepAlivePass, keep_runs_alive
    from ..runtime import get_engine

    engine = get_engine()
    if engine.settings.retention is None:
        print("retention is off (WORKFLOWS_RETENTION=off): no item expires, nothing to renew")
        return 0
    with _counting_failures() as failures:
        kept = keep_runs_alive(engine, state=KeepAlivePass())
    return _outcome(f"renewed {kept} live run(s)", failures)


def cmd_retention_sweep(args: argparse.Namespace) -> int:
    from ..core.storage.retention import retain_ended_runs
    from ..runtime import get_engine

    engine = get_engine()
    if engine.settings.retention is None:
        print("retention is off (WORKFLOWS_RETENTION=off): ended runs are kept")
        return 0
    total = 0
    with _counting_failures() as failures:
        while (stamped := retain_ended_runs(engine)) > 0:  # a page of 100 at a time, until none is due
            total += stamped
    return _outcome(f"stamped {total} ended run(s) with their TTL", failures)


def add_retention_commands(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``retention keep-alive`` and ``retention sweep`` to the top-level commands."""
    retention = add("retention", lambda a: 2, "beat's retention work, now").add_subparsers(
        dest="retention_cmd", required=True)
    add("keep-alive", cmd_retention_keep_alive,
        "renew the TTL of every live run's history, join and signal items not renewed for half a horizon "
        "(a whole keep-alive pass now, e.g. after beat was down for days; beat also does this); exit 1 if "
        "a run could not be renewed", retention)
    add("sweep", cmd_retention_sweep,
        "stamp the items of runs ended at least a lease (WORKFLOWS_LEASE_SECONDS) ago with their TTL, and "
        "mark their payload objects ended (beat also does this); exit 1 if a run could not be stamped", retention)
