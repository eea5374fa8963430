"""Every stored item of a run, found independently of the store's own reads (a test-only Scan
of the DynamoDB tables, or the memory tables' contents), to check retention on each."""

from __future__ import annotations

from typing import Any

#: Timers are deleted (by the run's end, or by the sweep that fires them); only a hook's timeout
#: timer can outlive its run (see ``timer_ttl``). Schedules never expire.
NOT_EXPIRED = ("timers", "schedules")


def _belongs(item: dict[str, Any], run_id: str) -> bool:
    return any(isinstance(v, str) and (v == run_id or v.startswith(run_id + "#") or v.endswith("#" + run_id))
               for v in item.values())


def items_of_run(store: Any, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """``(table, item)`` for every item of every per-run table that names ``run_id`` (its own id, a
    join or branch partition ``<run id>#<pos>``, or a tag index key ``...#<run id>``)."""
    from workflows.memory import MemoryStore

    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(store, MemoryStore):
        for table in (store.runs, store.events, store.joins, store.hooks, store.signal_items, store.guards,
                      store.run_tags):
            found += [(table.name, dict(item)) for item in table.items.values() if _belongs(item, run_id)]
        return found
    import boto3
    from boto3.dynamodb.types import TypeDeserializer

    settings = store.settings
    client = boto3.client("dynamodb", region_name=settings.region, endpoint_url=settings.dynamodb_endpoint)
    plain = TypeDeserializer()
    for model in store.m.all():
        name = model.Meta.table_name[len(settings.table_prefix):]
        if name in NOT_EXPIRED:
            continue
        for page in client.get_paginator("scan").paginate(TableName=model.Meta.table_name):
            for raw in page["Items"]:
                item = {k: plain.deserialize(v) for k, v in raw.items()}
                if _belongs(item, run_id):
                    found.append((name, item))
    return found


def ttl_of(item: dict[str, Any]) -> int | None:
    """An item's TTL attribute as epoch seconds."""
    value = item.get("retain_until")
    return None if value is None else int(value)


def timer_ttl(store: Any, timer_id: str) -> int | None:
    """The TTL attribute of a timer item (KeyError if there is none)."""
    from workflows.memory import MemoryStore

    if isinstance(store, MemoryStore):
        return ttl_of(store.timers.items[(timer_id,)])
    item = store.m.Timer.get(timer_id, consistent_read=True)
    return None if item.retain_until is None else int(item.retain_until.timestamp())
