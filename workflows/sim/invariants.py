"""What must hold in every scenario: liveness after every event, and at the end each run
ended as its workflow defines, nothing written after an end, no unexplained re-execution."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, cast

from ..core.model.embed import unembed
from ..core.model.records import RUN_RESULT_SEQ, TERMINAL, EventRecord, OpKind, RunRecord, RunStatus, TimerKind
from ..core.model.states import EventStatus, HookStatus
from ..core.ops.events import published
from ..core.replay.updates import is_answer_seq
from ..core.storage.payloads import Payloads
from ..core.storage.writes.items import event_record

if TYPE_CHECKING:
    from ..core.storage.ports import Blobs
    from .world import World


def _run(world: World, run_id: str) -> dict[str, Any] | None:
    """A run item, or as it was when TTL deleted it."""
    return world.store.runs.items.get((run_id,)) or world.decay.runs.get(run_id)


def final_item(world: World, run_id: str) -> dict[str, Any] | None:
    run = _run(world, run_id)
    while run is not None and run["status"] == RunStatus.CONTINUED and run.get("continued_to"):
        run = _run(world, run["continued_to"])
    return run


def _history(world: World, run_id: str) -> list[dict[str, Any]]:
    return [item for key, item in world.store.events.items.items() if key[0] == run_id]


def _waiting(run: dict[str, Any]) -> dict[str, Any]:
    """What a suspended run waits for (do not change it: a text is parsed once)."""
    waiting = run.get("waiting")
    return _parsed(waiting) if isinstance(waiting, str) else (waiting or {})


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(text))


def _waiting_is_legitimate(world: World, run: dict[str, Any], timers: set[str]) -> bool:
    """A suspended run with no lease or message may only wait for what has not happened (a
    timer does not excuse a fact that arrived without waking the run)."""
    waiting = _waiting(run)
    kind = waiting.get("kind")
    if kind == OpKind.HOOK_WAIT:
        hook = world.store.hooks.items.get((waiting.get("hook"),))
        if hook is not None and hook["status"] == HookStatus.EXPIRED:
            return run["run_id"] in timers  # the expiry timer fires again and wakes the run
        return hook is not None and hook["status"] == HookStatus.PENDING
    if kind == OpKind.SIGNAL:
        name = waiting.get("name")
        sent = sum(1 for key, s in world.store.signal_items.items.items()
                   if key[0] == run["run_id"] and s.get("name") == name)
        taken = sum(1 for e in _history(world, run["run_id"])
                    if e["kind"] == OpKind.SIGNAL and e.get("name") == name and e["status"] == EventStatus.RECEIVED)
        return sent <= taken
    if kind == OpKind.CHILD_RESULT:
        child = final_item(world, waiting.get("child", ""))
        return child is not None and child["status"] not in TERMINAL
    if kind == OpKind.FIRST_OF:
        return _race_is_open(world, run, waiting)
    return False


def _race_is_open(world: World, run: dict[str, Any], waiting: dict[str, Any]) -> bool:
    """A race (``first_of``) without a lease, timer or message may wait only while none of its
    signals, hooks and children has happened (its steps and timers need a lease or a timer)."""
    taken = set()
    for event in _history(world, run["run_id"]):
        if event["kind"] in (OpKind.SIGNAL, OpKind.FIRST_OF) and event.get("data"):
            meta = unembed(event["data"], "payload")[0]
            taken.add(meta.get("key") or meta.get("signal"))
    names = set(waiting.get("signals") or [])
    if any(key[0] == run["run_id"] and s.get("name") in names and key[1] not in taken
           for key, s in world.store.signal_items.items.items()):
        return False
    for token_hash in waiting.get("hooks") or []:
        hook = world.store.hooks.items.get((token_hash,))
        if hook is None or hook["status"] != HookStatus.PENDING:
            return False
    for child_id in waiting.get("children") or []:
        child = final_item(world, child_id)
        if child is None or child["status"] in TERMINAL:
            return False
    return not waiting.get("dues")


WAITS = frozenset({OpKind.HOOK_WAIT.value, OpKind.SIGNAL.value, OpKind.CHILD_RESULT.value, OpKind.FIRST_OF.value})


def _history_counts(world: World) -> dict[str, int]:
    counts: dict[str, int] = {}
    for run_id, _ in world.store.events.items:
        counts[run_id] = counts.get(run_id, 0) + 1
    return counts


def _liveness_state(world: World) -> tuple[int | None, ...]:
    """A count of the changes to everything the liveness check reads (the same count: the same state)."""
    store = world.store
    try:
        return (world.broker.changes, store.runs.items.changes, store.events.items.changes,  # type: ignore[attr-defined]
                store.timers.items.changes, store.hooks.items.changes,  # type: ignore[attr-defined]
                store.signal_items.items.changes)  # type: ignore[attr-defined]
    except AttributeError:  # tables of plain dicts: no count, always checked
        return (None,)


def check_liveness(world: World) -> None:
    """Every live run has a lease, a due timer, a message, or waits for what has not happened.

    The check reads only the store's tables and the queued messages (not the time): if none of
    them changed since it last ran (and found nothing, or the world would have stopped), it
    would find nothing again and change none of its own records, so it is skipped.
    """
    state = _liveness_state(world)
    if None not in state and state == world.liveness_checked:
        return
    world.liveness_checked = state
    timers: set[str] = set()
    # A wake timer always wakes its run (an inline step's backoff; a run deferred to a worker
    # that serves it, whose waiting is kept and may already be satisfied).
    wakes: set[str] = set()
    wake = TimerKind.WAKE.value
    for timer in world.store.timers.items.values():
        timers.add(timer["run_id"])
        if timer["kind"] == wake:
            wakes.add(timer["run_id"])
    messages = {e.run_id for e in world.broker.messages.values()}
    counts: dict[str, int] | None = None
    total = len(world.store.events.items)
    recount, world.events_seen = total != world.events_seen, total  # no new record: no ended run got one
    for (run_id,), run in world.store.runs.items.items():
        if run["status"] in TERMINAL:
            if not recount and run_id in world.ended_history:
                continue
            counts = _history_counts(world) if counts is None else counts
            count = counts.get(run_id, 0)
            seen = world.ended_history.setdefault(run_id, count)
            if count < seen:
                world.ended_history[run_id] = seen = count
            if count > seen:  # (TTL may delete records: fewer is no write)
                world.violations.append(f"run {run_id} got history records after its end ({seen} -> {count})")
            continue
        if run.get("lease_expires_at") is not None or run_id in messages or run_id in wakes:
            continue
        if run["status"] == RunStatus.SUSPENDED and _waiting(run).get("kind") in WAITS:
            if _waiting_is_legitimate(world, run, timers):
                continue
        elif run_id in timers:
            continue
        world.violations.append(f"run {run_id} is stranded: {run['status']}, waiting {run.get('waiting')}, "
                                "no lease, no timer, no message")


PROGRESS_GAP = 12.0  # an executor that gets control back this often renews its lease in time


def check_recovery(world: World, run_id: str) -> None:
    """A lease may expire only if its holder stopped or stalled (or its message waited).

    A resume renews its lease at op boundaries once a third of it passed, so an actor
    that has worked on the run for most of a lease, getting control back at least
    every ``PROGRESS_GAP`` simulated seconds with no process stalled meanwhile, still
    holds a live lease: recovering its run then means the lease was not renewed.
    """
    lease = world.processes[0].engine.settings.lease_seconds
    working = [a for a in world.actors if a.run_id == run_id and not a.done]
    queued = any(e.run_id == run_id for e in world.broker.messages.values())
    if not world.faults.stops_processes and not working and not queued:
        world.violations.append(f"run {run_id} was recovered though no process died or stalled and no message "
                                "for it waited: a resume dropped a run it held")
    for actor in working:
        if actor.kill or actor.started <= world.last_pause:
            continue
        busy, gap = world.time - actor.started, max(actor.longest_gap, world.time - actor.last_call)
        if busy >= lease - 5 and gap <= PROGRESS_GAP:
            world.violations.append(f"run {run_id} was recovered while {actor.name} ran it for {busy:.0f}s, "
                                    f"making progress at least every {gap:.0f}s: its lease was not renewed")


class _Archive:
    """The payload bucket with the objects the world deleted (for the end checks)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def get_blob(self, key: str) -> bytes | None:
        gone = self.world.decay.gone_objects.get(key)
        return self.world.store.blob_objects.objects.get(key) or (gone[1] if gone else None)

    def put_blob(self, key: str, data: bytes) -> None:
        raise AssertionError("the end checks write nothing")


def _resolved(world: World, text: str) -> str:
    """A stored payload's text, read from the blob store if it is a reference (no faults)."""
    archive = cast("Blobs", _Archive(world))  # resolving reads objects only; the other methods are never called
    return Payloads(archive, world.store.settings).resolve(text) or text


def check_exclusive(world: World, label: str) -> None:
    """Two attempts of a ``concurrency=1`` step never run at once, unless a process stalled
    since the earlier of the two tasks began: a stall between taking the slot and entering the
    body counts too, whichever of the two stalled (its slot's lease may then have passed and been
    reclaimed by the other; seed 95882: the entering attempt took the slot, stalled 85 s before
    its body, and entered after the other had taken the expired slot)."""
    actor = world.baton.actor()
    began = getattr(actor, "started", world.time)
    inside = world.inside.setdefault(label, {})
    for other, since in list(inside.items()):
        if other.done or other.kill:
            inside.pop(other, None)
        elif other is not actor and min(since, began) > world.last_pause:
            world.violations.append(f"two attempts of the concurrency=1 step {label} ran at once: "
                                    f"{other.name} since {since:.1f}s and {getattr(actor, 'name', '?')}")
    if actor is not None:
        inside[actor] = getattr(actor, "started", world.time)


def check_one_live_run(world: World, run_id: str) -> None:
    """A step of a run of the ``concurrency=1`` workflow runs only while no other run of it that
    has begun is live (a workflow slot has no lease: no stall excuses a second live run)."""
    world.gated_runs.add(run_id)
    live = sorted(r for r in world.gated_runs if (item := _run(world, r)) is not None
                  and item["status"] not in TERMINAL)
    if len(live) > 1:
        world.violations.append(f"runs {', '.join(live)} of the concurrency=1 workflow were live at once")


def check_ends(world: World) -> None:
    """Each run ended as its workflow defines; re-executions are explained by faults."""
    for instance in world.instances:
        for run_id in (instance.run_id, *instance.forks):  # a fork ends as its original may
            run = final_item(world, run_id)
            assert run is not None
            value = None if run.get("result") is None else json.loads(_resolved(world, run["result"]))
            allowed = instance.workload.ends(instance.args)
            if instance.cancel_sent and run_id == instance.run_id:
                allowed = [*allowed, (RunStatus.CANCELLED.value, None)]
            if (run["status"], _freeze(value)) not in {(s, _freeze(v)) for s, v in allowed}:
                world.violations.append(f"run {run_id} ({instance.workload.name}{_short(instance.args)}) ended "
                                        f"{run['status']} with {value!r} {run.get('error') or ''}; expected one "
                                        f"of {sorted(map(str, allowed))[:4]}")
            check_published(world, run_id)
        if instance.workload.check is not None:
            instance.workload.check(world, instance)
    extra: dict[str, int] = {}
    for key, count in world.executions.items():
        if count > 1:
            extra[key[0]] = extra.get(key[0], 0) + count - 1
    for run_id, repeats in extra.items():
        record = _run(world, run_id) or {}
        explained = world.excuses.get(run_id, 0) + int(record.get("recoveries") or 0)
        if repeats > explained:
            world.violations.append(f"run {run_id}: steps ran {repeats} extra time(s), explained by {explained} "
                                    "crash(es), redeliveries and recoveries")


def check_published(world: World, run_id: str) -> None:
    """A run's event and stream items are exactly what its op records published (``core.ops.events``)."""
    items = _history(world, run_id)
    if any("retain_until" in i for i in items):
        return  # expiry may already have taken some of them, in any order
    records = sorted((event_record(i) for i in items if i["seq"] >= 0), key=lambda r: r.seq)
    expected = sorted((r.seq, r.name, r.data) for r in published(records))
    answers = [i for i in items if is_answer_seq(int(i["seq"]))]
    actual = sorted((int(i["seq"]), i.get("name"), i.get("data")) for i in items
                    if i["seq"] < 0 and i["seq"] != RUN_RESULT_SEQ and not is_answer_seq(int(i["seq"])))
    if actual != expected:
        world.violations.append(f"run {run_id}: its event and stream items {actual[:4]} are not what its "
                                f"op records published {expected[:4]}")
    check_answers(world, run_id, records, answers)


def check_answers(world: World, run_id: str, records: list[EventRecord], answers: list[dict[str, Any]]) -> None:
    """Each update id was handled at most once in a run (one ``update`` record), and a run's answer
    items are its update records' answers, plus refusals (``core.replay.updates``)."""
    handled = [str(unembed(r.data or "{}", "payload")[0].get("id")) for r in records
               if r.is_outcome and r.kind == OpKind.UPDATE.value]
    twice = sorted({h for h in handled if handled.count(h) > 1})
    if twice:
        world.violations.append(f"run {run_id}: updates {twice[:4]} were handled more than once")
    answered = sorted(str(i.get("name")) for i in answers if i.get("status") != EventStatus.REFUSED)
    if answered != sorted(set(handled)):
        world.violations.append(f"run {run_id}: its update answers {answered[:4]} are not its update "
                                f"records {sorted(set(handled))[:4]}")


def final_record(world: World, run_id: str) -> RunRecord:
    """The last run of a continue-as-new chain, as the engine sees it."""
    return world.store.get_run((final_item(world, run_id) or {"run_id": run_id})["run_id"])


def _short(args: list[Any]) -> str:
    """Arguments as a violation shows them (a large payload cut short)."""
    text = repr(args)
    return text if len(text) <= 80 else text[:77] + "..."


def _freeze(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
