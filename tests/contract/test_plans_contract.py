"""Store contract: the interpreters of write plans (``workflows.core.storage.plans``), on both stores.

The plans write items of the ``joins`` table (keys ``join_id``, ``slot``; a string ``data``, a
number ``total``, a number set ``done``) and of ``timers``: any plan over any table is interpreted
the same way.
"""

from __future__ import annotations

import pytest

from workflows.core.storage.plans import (
    CONDITION_FAILED,
    A,
    Add,
    Check,
    Copy,
    Delete,
    DeleteFrom,
    Put,
    Remove,
    RemoveIn,
    Set,
    SetIfMissing,
    SetIn,
    Update,
    plan,
)
from workflows.core.storage.retention import write_expiry
from workflows.errors import StorageError

from .support import uid


def join(store, slot: int = 0, **values):  # type: ignore[no-untyped-def]
    """A fresh join item written unconditionally; returns its key."""
    key = (uid("j"), slot)
    assert store.commit(plan("put", Put("joins", {"join_id": key[0], "slot": slot, **values})))
    return key


def read(store, key):  # type: ignore[no-untyped-def]
    """The join item at ``key``, without the TTL every join write adds (tested on its own below)."""
    return without_ttl(store.read_item("joins", key))


def without_ttl(item):  # type: ignore[no-untyped-def]
    return None if item is None else {k: v for k, v in item.items() if k != "retain_until"}


CONDITIONS = [
    (A("data").exists(), True), (A("error").exists(), False),
    (A("error").missing(), True), (A("data").missing(), False),
    (A("total") == 3, True), (A("total") == 4, False), (A("data") == "x", True),
    (A("total") != 4, True), (A("total") != 3, False),
    (A("total") < 4, True), (A("total") < 3, False),
    (A("total") <= 3, True), (A("total") <= 2, False),
    (A("total") > 2, True), (A("total") > 3, False),
    (A("total") >= 3, True), (A("total") >= 4, False),
    (A("error") < 4, False),  # a comparison with a missing attribute is false
    (A("error") != 4, True),  # ... but <> holds
    (A("data").is_in("y", "x"), True), (A("data").is_in("y", "z"), False),
    ((A("total") == 3) & A("data").exists(), True), ((A("total") == 3) & A("error").exists(), False),
    ((A("total") == 4) | A("data").exists(), True), ((A("total") == 4) | A("error").exists(), False),
    (~(A("total") == 4), True), (~A("data").exists(), False),
    (A("done").contains(2), True), (A("done").contains(5), False), (~A("done").contains(5), True),
    (A("data").contains("x"), True),
]


@pytest.mark.parametrize(("cond", "expected"), CONDITIONS, ids=[str(i) for i in range(len(CONDITIONS))])
def test_each_condition_kind(store, cond, expected) -> None:  # type: ignore[no-untyped-def]
    key = join(store, data="x", total=3, done={1, 2})
    done = store.commit(plan("set", Update("joins", key, (Set("data", "changed"),), cond)))
    assert done.applied is expected
    assert done.reasons == [None if expected else CONDITION_FAILED]
    assert read(store, key)["data"] == ("changed" if expected else "x")


def test_each_update_action(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, data="x", total=3, done={1, 2}, error="e")
    done = store.commit(plan("update", Update("joins", key, (
        Set("data", "y"), Add("total", 2), Add("done", frozenset({3})),
        Remove("error")))))
    assert done.applied
    expected = {"join_id": key[0], "slot": key[1], "data": "y", "total": 5, "done": {1, 2, 3}}
    assert without_ttl(done.item) == expected  # a lone update returns the item after it
    assert read(store, key) == expected
    store.commit(plan("update", Update("joins", key, (SetIfMissing("error", "set"), SetIfMissing("total", 9),
                                                      DeleteFrom("done", frozenset({1, 2, 3})), Set("data", None)))))
    assert read(store, key) == {"join_id": key[0], "slot": key[1], "total": 5, "error": "set"}
    store.commit(plan("update", Update("joins", key, (Add("done", frozenset({4, 5})),))))
    store.commit(plan("update", Update("joins", key, (DeleteFrom("done", frozenset({4})),))))
    assert read(store, key)["done"] == {5}


def test_an_update_creates_a_missing_item_and_a_put_replaces(store) -> None:  # type: ignore[no-untyped-def]
    key = (uid("j"), 1)
    assert store.commit(plan("add", Update("joins", key, (Add("total", 1),))))
    assert read(store, key) == {"join_id": key[0], "slot": 1, "total": 1}
    assert store.commit(plan("put", Put("joins", {"join_id": key[0], "slot": 1, "data": "d"}, A("total") == 1)))
    assert read(store, key) == {"join_id": key[0], "slot": 1, "data": "d"}
    assert not store.commit(plan("put", Put("joins", {"join_id": key[0], "slot": 1}, A("slot").missing())))


def test_history_and_join_writes_expire_from_the_write_and_other_tables_do_not(store) -> None:  # type: ignore[no-untyped-def]
    """Each store commits a plan with its history and join items expiring retention + horizon after the write
    (``core.storage.retention.expiring``), stored as the tables' TTL attribute; a write that sets the TTL
    keeps its own."""
    until = write_expiry(store.now(), store.settings)
    key, run_id = (uid("j"), 1), uid("r")
    assert store.commit(plan("two", Update("joins", key, (Add("total", 1),)),
                             Put("history", {"run_id": run_id, "seq": 999, "kind": "step", "at": 1.0,
                                              "status": "completed"})))
    assert store.read_item("joins", key)["retain_until"] == until
    assert store.read_item("history", (run_id, 999))["retain_until"] == until
    assert store.commit(plan("own", Update("joins", key, (Set("retain_until", until + 5),))))
    assert store.read_item("joins", key)["retain_until"] == until + 5
    assert store.commit(plan("signal", Put("signals", {"run_id": run_id, "signal_key": "go#1", "name": "go",
                                                   "sent_at": 1.0})))
    assert store.read_item("signals", (run_id, "go#1"))["retain_until"] == until  # written for the run by others
    limit = uid("f")
    assert store.commit(plan("flow", Put("flow", {"limit_id": limit, "slot": 0, "holder": "x"})))
    assert "retain_until" not in store.read_item("flow", (limit, 0))  # not a run's: no expiry added


def test_delete_with_and_without_condition(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, total=1)
    assert not store.commit(plan("delete", Delete("joins", key, A("total") == 2)))
    assert read(store, key) is not None
    assert store.commit(plan("delete", Delete("joins", key, A("total") == 1)))
    assert read(store, key) is None
    assert store.commit(plan("delete", Delete("joins", key)))  # a missing item: fine


def test_a_transaction_is_all_or_nothing_with_reasons_in_order(store) -> None:  # type: ignore[no-untyped-def]
    first, second, third = join(store, total=1), join(store, total=1), join(store, total=1)
    fresh = (uid("j"), 0)
    tx = plan("tx", Update("joins", first, (Add("total", 1),)),
              Put("joins", {"join_id": fresh[0], "slot": 0, "data": "new"}, A("join_id").missing()),
              Check("joins", second, A("total") == 2),
              Delete("joins", third, A("total") == 5))
    done = store.commit(tx)
    assert not done.applied
    assert done.reasons == [None, None, CONDITION_FAILED, CONDITION_FAILED]
    assert read(store, first)["total"] == 1 and read(store, fresh) is None and read(store, third) is not None
    store.commit(plan("fix", Update("joins", second, (Set("total", 2),))))
    store.commit(plan("fix", Update("joins", third, (Set("total", 5),))))
    assert store.commit(tx).applied
    assert read(store, first)["total"] == 2 and read(store, fresh)["data"] == "new" and read(store, third) is None


def test_a_lone_check_is_a_transaction(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, total=1)
    assert store.commit(plan("check", Check("joins", key, A("total") == 1))).applied
    assert store.commit(plan("check", Check("joins", key, A("total") == 2))).reasons == [CONDITION_FAILED]


def test_a_retried_transaction_with_the_same_token_applies_once(store) -> None:  # type: ignore[no-untyped-def]
    """A transaction sent again (its response lost) is the same request: it succeeds, applying once."""
    key, other = join(store, total=0), join(store, total=0)
    token = uid("req")
    tx = plan("tx", Update("joins", key, (Add("total", 1), Set("data", token)), A("data").missing()),
              Update("joins", other, (Add("total", 1),)), token=token,
              own=Check("joins", key, A("data") == token))
    assert store.commit(tx).applied
    assert store.commit(tx).applied  # the retry: recognised by its token (or by ``own``)
    assert read(store, key)["total"] == 1


def test_own_recognises_a_lone_write_that_applied(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, total=0)
    token = uid("req")
    write = plan("claim", Update("joins", key, (Set("data", token), Add("total", 1)), A("data").missing()),
                 own=Check("joins", key, A("data") == token))
    assert store.commit(write).applied and store.commit(write).applied
    assert read(store, key)["total"] == 1
    other = plan("claim", Update("joins", key, (Set("data", "theirs"),), A("data").missing()),
                 own=Check("joins", key, A("data") == "theirs"))
    assert not store.commit(other).applied


def test_size_limits_are_checked_before_any_request(store) -> None:  # type: ignore[no-untyped-def]
    key = (uid("j"), 0)
    with pytest.raises(StorageError, match="'data'"):
        plan("put", Put("joins", {"join_id": key[0], "slot": 0, "data": "x" * 410_000}))
    with pytest.raises(StorageError, match="1 to 100"):
        plan("tx", *[Check("joins", (key[0], i), A("slot").exists()) for i in range(101)])
    with pytest.raises(StorageError, match="twice"):
        plan("tx", Update("joins", key, (Add("total", 1),)), Check("joins", key, A("total") == 1))
    with pytest.raises(StorageError, match="twice"):
        plan("update", Update("joins", key, (Add("total", 1), Set("total", 2))))
    assert read(store, key) is None


def test_an_update_past_the_item_limit_is_refused(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, data="x" * 300_000)
    with pytest.raises(StorageError):
        store.commit(plan("grow", Update("joins", key, (Set("error", "y" * 200_000),))))
    assert "error" not in read(store, key)


def test_ttl_attributes_are_epoch_seconds(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, retain_until=1_900_000_000)
    assert store.read_item("joins", key)["retain_until"] == 1_900_000_000
    assert store.commit(plan("ttl", Update("joins", key, (Set("total", 1),), A("retain_until") < 2_000_000_000)))


def test_map_entries_and_copies(store) -> None:  # type: ignore[no-untyped-def]
    """``SetIn``/``RemoveIn`` change one entry of a map attribute; ``Copy`` sets one attribute from another."""
    key = (uid("s"),)
    required = {"workflow": "wf", "spec": "{}", "state": "active", "overlap": "skip", "args": "[]", "created_at": 1,
                "updated_at": 1}  # what the DynamoDB model requires
    assert store.commit(plan("put", Put("schedules", {"schedule_id": key[0], "heads": {}, "next_due_at": 5,
                                                      **required})))
    assert store.commit(plan("map", Update("schedules", key, (SetIn("heads", "a", "r1"), SetIn("heads", "b", "r2"),
                                                              Copy("due_at", "next_due_at")))))
    item = store.read_item("schedules", key)
    assert (item["heads"], item["due_at"]) == ({"a": "r1", "b": "r2"}, 5)
    assert store.commit(plan("map", Update("schedules", key, (RemoveIn("heads", "a"),))))
    assert store.read_item("schedules", key)["heads"] == {"b": "r2"}


def test_a_read_may_project_attributes(store) -> None:  # type: ignore[no-untyped-def]
    key = join(store, data="x" * 100, total=3)
    assert store.read_item("joins", key, attrs=("join_id", "total")) == {"join_id": key[0], "total": 3}
    assert store.read_item("joins", (uid("j"), 0), attrs=("total",)) is None
