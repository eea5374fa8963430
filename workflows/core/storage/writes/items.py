"""The items the shared writes store, and the records read back from items (plain values)."""

from __future__ import annotations

import json

from ....settings import Settings
from ...model.records import EventRecord, HookRecord, RunRecord, SignalRecord, TimerRecord
from ..listing import listing_key
from ..plans import Item
from ..rules import check_item_size, lease_expiry, new_request, shard_of
from ..tags import index_key, index_sort_key


def to_json(value: object) -> str:
    """Compact JSON for the store's own small structured fields."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def run_item(run: RunRecord, now: float, settings: Settings) -> Item:
    """The item of a new run: pending, leased (so a lost start is recovered), with a request id; or,
    with a ``start_at``, delayed and without a lease (its ``start`` timer, in the same write, starts it)."""
    shards = settings.index_shards
    status = "pending" if run.start_at is None else "delayed"
    lease = lease_expiry(now, settings) if run.start_at is None else None
    return {"run_id": run.run_id, "workflow": run.workflow, "status": status,
            "status_shard": listing_key(status, run.run_id, shards),
            "workflow_shard": listing_key(run.workflow, run.run_id, shards),
            "created_at": run.created_at or now, "updated_at": now, "args": run.args, "cursor": -1,
            "wake_seq": 0, "recoveries": 0, "cancel_requested": False, "lease_shard": shard_of(run.run_id, shards),
            "lease_expires_at": lease, "deadline": run.deadline, "start_at": run.start_at,
            "idempotency_key": run.idempotency_key, "parent_run_id": run.parent_run_id,
            "parent_pos": run.parent_pos, "continued_from": run.continued_from, "schedule_id": run.schedule_id,
            "fire_time": run.fire_time, "code_version": run.code_version, "forked_from": run.forked_from,
            "forked_at": run.forked_at, "req": run.req or new_request(),
            "tags": to_json(run.tags) if run.tags else None, "chain_head": run.chain_head, "priority": run.priority}


#: Stored attribute names that differ from the code's words (existing tables hold them; see
#: docs/architecture.md, glossary): a timer's write id, a schedule's revision, when a hook was completed,
#: a flow item's slot number (its sort key; a join's entry is stored as "slot" too).
WRITE_ID = "version"
REVISION = "version"
COMPLETED_AT = "resumed_at"
SLOT_NUMBER = "slot"
ENTRY = "slot"


def timer_item(timer: TimerRecord, shards: int) -> Item:
    """The item of a timer (a new write id on every write)."""
    check_item_size({"data": timer.data})
    return {"timer_id": timer.timer_id, "shard": shard_of(timer.timer_id, shards), "due_at": timer.due_at,
            "kind": timer.kind, "run_id": timer.run_id, "pos": timer.pos, "data": timer.data,
            WRITE_ID: new_request()}


def event_item(event: EventRecord, now: float) -> Item:
    """The item of a history record (size-checked)."""
    check_item_size({"data": event.data, "error": event.error})
    return {"run_id": event.run_id, "seq": event.seq, "kind": event.kind, "name": event.name, "pos": event.pos,
            "status": event.status, "at": event.at or now, "data": event.data, "error": event.error,
            "attempt": event.attempt, "started_at": event.started_at,
            "next_waiting": None if event.next_waiting is None else to_json(event.next_waiting)}


def hook_item(hook: HookRecord) -> Item:
    """The item of a new hook (its token's hash, never the token)."""
    return {"token_hash": hook.token_hash, "run_id": hook.run_id, "pos": hook.pos, "name": hook.name,
            "status": hook.status, "created_at": hook.created_at, "expires_at": hook.expires_at,
            "schema": hook.schema}


def tag_item(tag: str, run: RunRecord) -> Item:
    """The index item of one tag of a run."""
    return {"tag": tag, "run_key": index_sort_key(run.created_at, run.run_id), "run_id": run.run_id,
            "workflow": run.workflow, "created_at": run.created_at}


def tag_items(run: RunRecord) -> list[Item]:
    """The index items of a new run's tags (written with the run, in its transaction)."""
    return [tag_item(index_key(k, v, run.run_id), run) for k, v in sorted((run.tags or {}).items())]


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def run_record(item: Item) -> RunRecord:
    """The run of a runs item."""
    return RunRecord(
        run_id=item["run_id"], workflow=item["workflow"], status=item["status"], created_at=item["created_at"],
        updated_at=item.get("updated_at") or item["created_at"], args=item.get("args") or "[[],{}]",
        ended_at=item.get("ended_at"), result=item.get("result"), error=item.get("error"),
        cursor=int(item.get("cursor", -1)), waiting=json.loads(item["waiting"]) if item.get("waiting") else None,
        wake_seq=int(item.get("wake_seq") or 0), lease_expires_at=item.get("lease_expires_at"),
        recoveries=int(item.get("recoveries") or 0), recovery_pending=int(item.get("recovery_pending") or 0),
        recovery_taken_at=_int(item.get("recovery_taken_at")),
        recovery_faults=int(item.get("recovery_faults") or 0), cancel_requested=bool(item.get("cancel_requested")),
        deadline=item.get("deadline"), idempotency_key=item.get("idempotency_key"),
        parent_run_id=item.get("parent_run_id"), parent_pos=_int(item.get("parent_pos")),
        continued_from=item.get("continued_from"), continued_to=item.get("continued_to"),
        schedule_id=item.get("schedule_id"), fire_time=item.get("fire_time"),
        ddb_reads=int(item.get("ddb_reads") or 0), ddb_writes=int(item.get("ddb_writes") or 0),
        sqs_sends=int(item.get("sqs_sends") or 0),
        tags=json.loads(item["tags"]) if item.get("tags") else None, retain_until=item.get("retain_until"),
        stamped_at=item.get("stamped_at"),
        code_version=item.get("code_version"), forked_from=item.get("forked_from"),
        forked_at=_int(item.get("forked_at")), chain_head=item.get("chain_head"), chain_last=item.get("chain_last"),
        priority=item.get("priority"), start_at=item.get("start_at"),
        deferral=json.loads(item["deferral"]) if item.get("deferral") else None,
        req=item.get("req"), last_outcome=last_outcome(item),
    )


#: The run item's attribute holding its last op's outcome, written by the end (``RunRecord.last_outcome``).
LAST_OUTCOME = "last_outcome"


def last_outcome_value(event: EventRecord) -> str:
    """How the end stores its last op's outcome on the run item (the history item's fields, as JSON)."""
    return to_json({k: v for k, v in event_item(event, event.at).items() if v is not None})


def last_outcome(item: Item) -> EventRecord | None:
    """The last op's outcome a run item carries, if its end wrote one."""
    text = item.get(LAST_OUTCOME)
    return None if not text else event_record(json.loads(text))


def event_record(item: Item) -> EventRecord:
    """The history record of a history item."""
    return EventRecord(run_id=item["run_id"], seq=int(item["seq"]), kind=item["kind"], status=item["status"],
                       at=item["at"], name=item.get("name"), data=item.get("data"), error=item.get("error"),
                       attempt=_int(item.get("attempt")), started_at=item.get("started_at"),
                       next_waiting=json.loads(item["next_waiting"]) if item.get("next_waiting") else None)


def hook_record(item: Item) -> HookRecord:
    """The hook of a hooks item."""
    return HookRecord(token_hash=item["token_hash"], run_id=item["run_id"], pos=int(item["pos"]),
                      name=item["name"], status=item["status"], created_at=item["created_at"],
                      expires_at=item.get("expires_at"), schema=item.get("schema"), payload=item.get("payload"),
                      completed_at=item.get(COMPLETED_AT))


def timer_record(item: Item) -> TimerRecord:
    """The timer of a timers item."""
    return TimerRecord(timer_id=item["timer_id"], kind=item["kind"], run_id=item["run_id"], due_at=item["due_at"],
                       pos=_int(item.get("pos")), data=item.get("data"), write_id=item.get(WRITE_ID))


def signal_record(item: Item) -> SignalRecord:
    """The signal (or update request) of a signals item."""
    return SignalRecord(run_id=item["run_id"], signal_key=item["signal_key"], name=item["name"],
                        payload=item.get("payload"), sent_at=item["sent_at"],
                        order_number=_int(item.get("order_number")))
