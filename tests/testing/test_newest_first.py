"""Listing without a filter: full pages, newest first across every status, one cursor (issue 27,
item 11). Before, ``list_runs()`` walked status by status: a page of the suspended runs and a
cursor, then a page of the completed ones."""

from __future__ import annotations

import pytest

from tests.testing import newest_flows as flows
from workflows import list_run_summaries, list_runs
from workflows.errors import SerializationError
from workflows.testing import WorkflowEnv


@pytest.fixture
def started() -> list[str]:
    """Ten runs one second apart, mixed: 2 suspended, 6 completed, 2 failed; their ids oldest first."""
    with WorkflowEnv() as env:
        plan = [flows.waits, flows.completes, flows.fails, flows.completes, flows.completes, flows.waits,
                flows.completes, flows.fails, flows.completes, flows.completes]
        ids = []
        for n, wf in enumerate(plan):
            ids.append(wf.start(n).run_id if wf is flows.completes else wf.start().run_id)
            env.run_until_idle()
            env.advance("1s")
        yield ids


def test_one_page_holds_every_status_newest_first(started: list[str]) -> None:
    page = list_runs(limit=20)
    assert [run.run_id for run in page] == started[::-1]
    assert page.next_cursor is None
    assert sorted({run.status for run in page}) == ["completed", "failed", "suspended"]


def test_pages_are_full_and_give_every_run_once_in_order(started: list[str]) -> None:
    seen, cursor, sizes = [], None, []
    while True:
        page = list_run_summaries(limit=3, cursor=cursor)
        sizes.append(len(page.items))
        seen += [run.run_id for run in page]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == started[::-1]
    assert sizes == [3, 3, 3, 1]


def test_a_cursor_of_another_listing_is_refused(started: list[str]) -> None:
    by_status = list_runs(status="completed", limit=2).next_cursor
    with pytest.raises(SerializationError, match="invalid cursor"):
        list_runs(limit=2, cursor=by_status)
    with pytest.raises(SerializationError, match="invalid cursor"):
        list_runs(limit=2, cursor="not a cursor")
