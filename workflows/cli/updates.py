"""``workflows runs update``: send an update into a running run and print its handler's answer."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable


def cmd_runs_update(args: argparse.Namespace) -> int:
    from ..client import update_run
    from .commands import parse_json_option

    payload = parse_json_option("--payload", args.payload)
    answer = update_run(args.run_id, args.name, payload, update_id=args.id, timeout=args.timeout)
    print(json.dumps(answer, default=str, ensure_ascii=False))
    return 0


def add_update_commands(runs: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``runs update`` to the ``runs`` subcommands."""
    p = add("update", cmd_runs_update,
            "send an update into a running run (its on_update(name) handler) and print the answer as JSON", runs)
    p.add_argument("run_id")
    p.add_argument("name")
    p.add_argument("--payload", "--data", default="null", help="the payload, as JSON")
    p.add_argument("--id", help="the update id: sending again with the same id prints the same answer, "
                                "never runs the handler twice (default: a new id)")
    p.add_argument("--timeout", default="60s",
                   help="how long to wait for the answer (e.g. 30s; default 60s); the update may still be applied "
                        "after it")
