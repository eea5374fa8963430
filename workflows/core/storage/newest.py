"""Runs of every status, newest first: one merge for the API, the CLI and the dashboard.

The listing indexes are kept per status (and per workflow); a listing without a filter
Queries the newest page of each status, bounded above by the cursor's creation time, and
merges them. The cursor holds the creation time of the last run given and the ids given at
exactly that time (the bound is inclusive, so runs created at the same instant are neither
lost nor repeated). Each page costs one Query per status.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ...errors import SerializationError
from ..model.records import Page, RunStatus, RunSummary, TimeRange
from .ports import Store

STATUSES = [s.value for s in RunStatus]
MAX_QUERY = 1000  # the largest page a listing Query is asked for


def newest_page(store: Store, limit: int, cursor: str | None = None, since: float | None = None,
                until: float | None = None) -> Page[RunSummary]:
    """One full page of up to ``limit`` runs of every status created within ``since``..``until``,
    newest first (ties: the greater run id first), and the cursor of the next (None at the end).

    Raises:
        SerializationError: ``cursor`` is not the cursor of such a listing.
    """
    after, given = decode_cursor(cursor)
    bound = after if until is None or (after is not None and after < until) else until
    merged = [run for status in STATUSES
              for run in store.list_run_summaries(status=status, limit=min(limit + len(given), MAX_QUERY),
                                                  created=TimeRange(since, bound))
              if run.run_id not in given]
    merged.sort(key=lambda run: (run.created_at, run.run_id), reverse=True)
    page = merged[:limit]
    if len(merged) <= limit:
        return Page(items=page, next_cursor=None)
    last = page[-1].created_at
    shown = {run.run_id for run in page if run.created_at == last} | (given if last == after else set())
    return Page(items=page, next_cursor=encode_cursor(last, shown))


def encode_cursor(last: float, shown: set[str]) -> str:
    """The opaque cursor after a page whose last run was created at ``last``."""
    text = json.dumps({"n": last, "ids": sorted(shown)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode()


def decode_cursor(cursor: str | None) -> tuple[float | None, set[str]]:
    """The creation time and the ids a cursor holds ((None, {}) for the first page).

    Raises:
        SerializationError: not a cursor of this listing.
    """
    if not cursor:
        return None, set()
    try:
        value: Any = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        last, ids = value["n"], value["ids"]
        if (set(value) != {"n", "ids"} or isinstance(last, bool) or not isinstance(last, (int, float))
                or not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
            raise ValueError("not a newest-first cursor")
    except (ValueError, TypeError, KeyError, UnicodeError) as exc:
        raise SerializationError(f"invalid cursor {cursor[:40]!r}: pass the next_cursor of an earlier page") from exc
    return float(last), set(ids)
