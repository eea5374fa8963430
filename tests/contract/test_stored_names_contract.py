"""Stored attribute names outlive the code's words: a timer's write id and a schedule's revision
are stored as ``version``, a completed hook's time as ``resumed_at``, a join's entry and a flow
item's slot number as ``slot`` (existing tables hold them; docs/architecture.md, glossary)."""

from __future__ import annotations

from typing import Any

from workflows.core.model.records import HookRecord
from workflows.core.ops.waits import hash_token

from .support import schedule, start, timer, uid


def raw_item(store: Any, table: str, key: tuple[Any, ...]) -> dict[str, Any]:
    """The item at ``key`` as stored, read apart from the store's own reads (a GetItem on DynamoDB)."""
    from workflows.memory import MemoryStore

    if isinstance(store, MemoryStore):
        return dict(getattr(store, table).items[key])
    import boto3

    from persistence.plans import MODELS

    model = getattr(store.m, MODELS[table])
    names = [getattr(model, n).attr_name for n in (model._hash_keyname, model._range_keyname) if n]
    client = boto3.client("dynamodb", region_name=store.settings.region,
                          endpoint_url=store.settings.dynamodb_endpoint)
    typed = {name: ({"N": str(value)} if isinstance(value, int) else {"S": value})
             for name, value in zip(names, key, strict=True)}
    return dict(client.get_item(TableName=model.Meta.table_name, Key=typed, ConsistentRead=True)["Item"])


def test_a_timers_write_id_is_stored_as_version(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    store.put_timer(timer(run_id, 0, store.now()))
    item = raw_item(store, "timers", (f"{run_id}#0#sleep",))
    assert "version" in item and "write_id" not in item
    (due,) = [t for t in store.due_timers() if t.run_id == run_id]
    assert due.write_id is not None
    assert store.claim_timer(due.timer_id, write_id=due.write_id) is True  # the read write id matches the stored one


def test_a_schedules_revision_is_stored_as_version(store) -> None:  # type: ignore[no-untyped-def]
    created = schedule(store)
    assert store.pause_schedule(created.schedule_id).revision == 2
    item = raw_item(store, "schedules", (created.schedule_id,))
    assert item["version"] in (2, {"N": "2"}) and "revision" not in item  # memory, DynamoDB


def test_a_completed_hooks_time_is_stored_as_resumed_at(store) -> None:  # type: ignore[no-untyped-def]
    run_id = start(store)
    hook = HookRecord(token_hash=hash_token(uid("token")), run_id=run_id, pos=0, name="approve", status="pending",
                      created_at=store.now())
    store.create_hook(hook, None, run_id, 0, "{}")
    assert store.complete_hook(hook.token_hash, '"ok"').completed_at == store.now()
    item = raw_item(store, "hooks", (hook.token_hash,))
    assert "resumed_at" in item and "completed_at" not in item


def test_join_entries_and_slot_numbers_are_stored_as_slot(store, clock) -> None:  # type: ignore[no-untyped-def]
    join = f"{uid()}#1"
    assert store.record_branch(join, 3, '"x"', None)
    assert "slot" in raw_item(store, "joins", (f"{join}#0", 3))
    limit = uid("step:s")
    number = store.acquire_slot(limit, 1, "a", clock.now() + 30)
    item = raw_item(store, "flow", (limit, number))
    assert "slot" in item and "number" not in item
    assert [(s.number, s.holder) for s in store.slot_holders(limit)] == [(number, "a")]
