"""``workflows runs fork|rerun``: start a run again from an op position (docs/versioning.md)."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def cmd_runs_fork(args: argparse.Namespace) -> int:
    from ..forking import fork_run
    from .commands import _imports

    _imports()  # the fork is a run of the original's workflow, with its deadline
    fork = fork_run(args.run_id, args.at, idempotency_key=args.key)
    print(fork.run_id)
    return 0


def cmd_runs_rerun(args: argparse.Namespace) -> int:
    from ..forking import rerun
    from .commands import _imports

    _imports()
    fork = rerun(args.run_id, idempotency_key=args.key)
    print(f"{fork.run_id} (forked at op {fork.record().forked_at})")
    return 0


def add_fork_commands(runs: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``runs fork`` and ``runs rerun`` to the ``runs`` subcommands."""
    from .commands import _int_in

    p = add("fork", cmd_runs_fork, "start a new run reusing a run's outcomes below op AT; prints its id", runs)
    p.add_argument("run_id")
    p.add_argument("--at", type=_int_in(0, 10**9), required=True, help="the first op position to run again")
    p.add_argument("--key", help="idempotency key: the same key returns the same fork")
    p = add("rerun", cmd_runs_rerun, "start a failed run again from its failed step; prints the new run's id", runs)
    p.add_argument("run_id")
    p.add_argument("--key", help="idempotency key: the same key returns the same rerun")
