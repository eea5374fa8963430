"""``workflows runs deferred``: the runs no worker that met them serves (docs/versioning.md)."""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

#: Suspended runs read per page while looking for deferred ones.
PAGE = 100


def cmd_runs_deferred(args: argparse.Namespace) -> int:
    from ..client import list_runs
    from ..core.admission.deferral import current_deferral, describe_deferral

    found, cursor, now = 0, None, time.time()
    while found < args.limit:
        page = list_runs(status="suspended", workflow=args.workflow, limit=PAGE, cursor=cursor)
        for run in page:
            deferral = current_deferral(run)
            if deferral is not None and found < args.limit:
                found += 1
                print(f"{run.run_id}  {run.workflow}  version={run.code_version or '-'}  "
                      f"{describe_deferral(deferral, now)}")
        cursor = page.next_cursor
        if cursor is None:
            break
    print(f"{found} deferred run(s)" + (" (--limit reached)" if found >= args.limit else ""))
    return 0


def add_deferred_commands(runs: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``runs deferred`` to the ``runs`` subcommands."""
    from .commands import _int_in

    p = add("deferred", cmd_runs_deferred, "list runs deferred because no worker that met them serves their "
            "workflow or code version (pages through the suspended runs)", runs)
    p.add_argument("--workflow")
    p.add_argument("--limit", type=_int_in(1, 100_000), default=100)
