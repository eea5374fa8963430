"""``workflows payloads orphans``: payload objects that no run will ever mark ended (docs/payloads.md)."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import Any, Callable

DEFAULT_MIN_AGE = 86_400.0


def cmd_payloads_orphans(args: argparse.Namespace) -> int:
    from ..core.background.orphans import delete_orphans, find_orphans
    from ..runtime import get_engine

    engine = get_engine()
    survey = find_orphans(engine, args.min_age)
    for orphan in survey.orphans:
        when = datetime.fromtimestamp(orphan.newest, timezone.utc).isoformat(timespec="seconds")
        print(f"payloads/{orphan.run_id}/  {len(orphan.keys)} object(s), newest written {when}: no such run")
    total = sum(len(o.keys) for o in survey.orphans)
    print(f"{len(survey.orphans)} orphan prefix(es), {total} object(s); "
          f"{len(survey.legacy)} object(s) of the older layout (payloads/<sha256>) kept")
    if args.delete:
        print(f"deleted {delete_orphans(engine, survey)} object(s)")
    return 0


def add_payload_commands(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``payloads orphans`` to the top-level commands."""
    from .commands import _seconds

    payloads = add("payloads", lambda a: 2, "objects of the payload bucket").add_subparsers(
        dest="payloads_cmd", required=True)
    p = add("orphans", cmd_payloads_orphans,
            "list run prefixes of the payload bucket whose run does not exist (never marked ended, never "
            "expiring); --delete removes them", payloads)
    p.add_argument("--min-age", type=_seconds, default=DEFAULT_MIN_AGE,
                   help="only prefixes whose newest object is at least this old (default 1d: a run being "
                        "created writes its objects a moment before its item)")
    p.add_argument("--delete", action="store_true", help="delete the objects of the prefixes listed")
