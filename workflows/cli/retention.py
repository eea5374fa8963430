"""``workflows retention``: beat's retention work, run now by an operator (docs/retention.md)."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def cmd_retention_keep_alive(args: argparse.Namespace) -> int:
    from ..core.retention import KeepAlivePass, keep_runs_alive
    from ..runtime import get_engine

    engine = get_engine()
    if engine.settings.retention is None:
        print("retention is off (WORKFLOWS_RETENTION=off): no item expires, nothing to renew")
        return 0
    print(f"renewed {keep_runs_alive(engine, state=KeepAlivePass())} live run(s)")
    return 0


def cmd_retention_sweep(args: argparse.Namespace) -> int:
    from ..core.retention import retain_ended_runs
    from ..runtime import get_engine

    engine = get_engine()
    if engine.settings.retention is None:
        print("retention is off (WORKFLOWS_RETENTION=off): ended runs are kept")
        return 0
    total = 0
    while (stamped := retain_ended_runs(engine)) > 0:  # a page of 100 at a time, until none is due
        total += stamped
    print(f"stamped {total} ended run(s) with their TTL")
    return 0


def add_retention_commands(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``retention keep-alive`` and ``retention sweep`` to the top-level commands."""
    retention = add("retention", lambda a: 2, "beat's retention work, now").add_subparsers(
        dest="retention_cmd", required=True)
    add("keep-alive", cmd_retention_keep_alive,
        "renew the TTL of every live run's history, join and signal items not renewed for half a horizon "
        "(a whole keep-alive pass now, e.g. after beat was down for days; beat also does this)", retention)
    add("sweep", cmd_retention_sweep,
        "stamp the items of runs ended at least the retention delay ago with their TTL, and mark their "
        "payload objects ended (beat also does this)", retention)
