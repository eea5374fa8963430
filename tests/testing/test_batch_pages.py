"""Listing batches reads one page, whatever the number kept (issue 40, item 6): ``list_batches``
(the CLI's ``batch list``, the dashboard's ``/batches``) makes at most 2 requests and reads at
most 2 pages' worth of items, and the next page starts below the last id shown."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from workflows import list_batches
from workflows.core.model.batches import BatchRecord, Selection, new_batch_id
from workflows.core.model.states import BatchState
from workflows.errors import InvalidBatch, SerializationError
from workflows.testing import WorkflowEnv

KEPT = 1500


def _keep(env: WorkflowEnv, n: int, *, live: int = 0) -> list[str]:
    """``n`` ended batches, then ``live`` live ones, a second apart: their ids, oldest first."""
    ids = []
    for i in range(n + live):
        env.clock.advance(1)
        now = env.clock.now()
        batch = BatchRecord(new_batch_id(now), "cancel", Selection(workflow="w"), {}, 5.0, created_at=now,
                            updated_at=now, due_at=now)
        env.store.create_batch(batch)
        if i < n:
            claimed = env.store.claim_batch(batch, "me", now + 30)
            assert env.store.end_batch(claimed, BatchState.COMPLETED) is not None
        ids.append(batch.batch_id)
    return ids


class Reads:
    """The store's requests while listing, and the items they returned."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.items = 0

    def __call__(self, name: str, apply: Callable[[], Any]) -> Any:
        result = apply()
        self.requests.append(name)
        if isinstance(result, tuple) and isinstance(result[0], list):  # a Query page: (items, last key)
            self.items += len(result[0])
        return result


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv() as kit:
        yield kit


def test_a_page_of_batches_is_two_requests_whatever_the_number_kept(env: WorkflowEnv) -> None:
    ids = _keep(env, KEPT, live=3)
    reads = Reads()
    env.store.interceptor = reads
    try:
        page = list_batches(20)
    finally:
        env.store.interceptor = None
    assert [b.batch_id for b in page] == ids[::-1][:20]
    assert [b.state for b in page[:4]] == ["running", "running", "running", BatchState.COMPLETED]
    assert len(reads.requests) <= 2 and reads.items <= 40, (reads.requests, reads.items)


def test_the_next_page_starts_below_the_last_id_shown_until_none_is_left(env: WorkflowEnv) -> None:
    ids = _keep(env, 45, live=2)
    seen, before = [], None
    while True:
        page = list_batches(20, before=before)
        seen += [b.batch_id for b in page]
        if len(page) < 20:
            break
        before = page[-1].batch_id
    assert seen == ids[::-1]


def test_since_keeps_the_batches_created_since_then(env: WorkflowEnv) -> None:
    ids = _keep(env, 10)
    since = env.clock.now() - 1.5  # the last two were created after it
    assert [b.batch_id for b in list_batches(50, since=since)] == ids[::-1][:2]


@pytest.mark.parametrize(("kwargs", "error"), [({"limit": 0}, InvalidBatch), ({"limit": 1001}, InvalidBatch),
                                                ({"before": ""}, SerializationError),
                                                ({"since": -1e308}, SerializationError)])
def test_bad_page_arguments_are_refused_with_a_typed_error(env: WorkflowEnv, kwargs: dict[str, Any],
                                                           error: type[Exception]) -> None:
    with pytest.raises(error):
        list_batches(**kwargs)


def test_batch_list_ends_a_full_page_with_the_option_of_the_next(env: WorkflowEnv,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from workflows.cli.commands import main

    ids = _keep(env, 25)
    assert main(["batch", "list", "--limit", "20"]) == 0
    first = capsys.readouterr().out.splitlines()
    assert first[-1] == f"next page: --before {ids[5]}" and len(first) == 21
    assert main(["batch", "list", "--limit", "20", "--before", ids[5]]) == 0
    rest = capsys.readouterr().out.splitlines()
    assert len(rest) == 5 and [line.split()[0] for line in rest] == ids[4::-1]
