"""The deleting world catches the data-loss bugs it was built for, and the batch and events scenarios
catch broken operations, re-introduced one at a time.

Each test puts a fixed bug back (with pytest's monkeypatch, in this process) and plays seeds
until one fails: the first failing seed must come within the first 200, with the violation
the bug causes. Seeds play in this process (one job), so the patch applies to them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pytest

from workflows.core.engine import Engine
from workflows.core.execution import flow
from workflows.core.storage.payloads import Payloads
from workflows.sim import run_seed

SEEDS = 200


def first_violation(seeds: int = SEEDS) -> tuple[int, str] | None:
    for seed in range(seeds):
        violations = run_seed(seed).violations
        if violations:
            return seed, violations[0]
    return None


def test_a_parent_that_reads_its_childs_expired_items_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 1: a child's end no longer writes its outcome into its parent's history, so the
    # parent reads the child's run item, which TTL deletes retention after the child ended.
    monkeypatch.setattr(Engine, "_child_end", lambda self, *args: None)
    found = first_violation()
    assert found is not None and "which the world deleted" in found[1], found


def test_a_fork_that_references_its_sources_objects_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 2: what crosses runs keeps pointing at the other run's objects (a fork's copied
    # records), which the lifecycle rule deletes with the source run.
    def keep(self: Payloads, text: str | None, owner: str, infrastructure: Any = None) -> str | None:
        return text

    monkeypatch.setattr(Payloads, "adopt", keep)
    found = first_violation()  # caught by the state invariant (keep.py) when the object expires, before any read
    assert found is not None and "payload object" in found[1], found


def test_a_timed_out_step_that_frees_its_slot_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 4: a step whose attempt timed out frees its concurrency slot at once, while its body runs on.
    def at_once(ends: list[Any], action: Callable[[], None]) -> None:
        action()

    monkeypatch.setattr(flow, "_after_all", at_once)
    found = first_violation()
    assert found is not None and "ran at once" in found[1], found


def test_an_end_that_leaves_its_children_to_run_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 5: a parent's end closes none of its children (no policy is applied, the timer does nothing).
    from workflows.core import engine
    from workflows.core.replay import children, commit

    for module in (children, commit, engine):
        monkeypatch.setattr(module, "to_close", lambda links, status: [])
    found = first_violation()
    assert found is not None and "expected cancelled" in found[1], found


def test_a_delayed_run_that_starts_early_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 6: a delayed run is stored leased, as a run that starts at once, and its start-time gate lets it
    # through: the reconciler starts it when the lease expires, before its time.
    from workflows.core.admission import gates
    from workflows.core.storage.writes import items

    stored = items.run_item
    monkeypatch.setattr(gates, "hold_delayed", lambda engine, run: True)
    monkeypatch.setattr(items, "run_item", lambda run, now, settings: {
        **stored(run, now, settings), "status": "pending", "lease_expires_at": now + settings.lease_seconds})
    found = first_violation()
    # Either check may see it first: the run started before its time, or its lease (which a delayed run
    # never has) expired with no process dead and was recovered.
    assert found is not None and any(sign in found[1] for sign in (
        "before its start time", "was recovered though no process died")), found


def test_a_batch_cancel_that_does_not_cancel_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 5: a batch counts a run done without asking it to cancel: a run asleep for days ends completed.
    from workflows.batches import driver

    real = driver.apply_to_run

    def counted_only(engine: Any, batch: Any, run_id: str) -> bool:
        return True if batch.operation == "cancel" else real(engine, batch, run_id)

    monkeypatch.setattr(driver, "apply_to_run", counted_only)
    found = first_violation()
    assert found is not None and "not cancelled" in found[1], found


def test_a_client_reading_events_out_of_order_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break 6: the stream a client reads lists its entries newest first.
    from workflows import events
    from workflows.sim import readers

    real = events.stream_page

    def reversed_page(engine: Any, run_id: str, offset: int) -> Any:
        page = real(engine, run_id, offset)
        return events.StreamPage(page.entries[::-1], page.next_offset, page.ended)

    monkeypatch.setattr(readers, "stream_page", reversed_page)
    found = first_violation()
    assert found is not None and "is not a prefix of" in found[1], found


def test_a_live_run_whose_items_are_not_kept_alive_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # History and join items are written expiring (retention + horizon after the write); without beat's
    # keep-alive pass, a run that lives longer than that has its history deleted under it.
    from workflows.core.storage.writes.retention import RetentionWrites

    monkeypatch.setattr(RetentionWrites, "keep_run_alive", lambda self, *args: False)
    found = first_violation()
    assert found is not None and "past its TTL" in found[1], found


def test_a_keep_alive_renewing_as_from_a_waits_deadline_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # The variant built and reverted on 2026-12-05: a suspended run was renewed as from its wait's
    # deadline. A run renewed during a wait with a year's timeout and woken early then had its next
    # renewal a year on, and what it recorded after waking expired under it (sim_woken_early).
    import json

    from workflows.core.storage.retention import write_expiry
    from workflows.core.storage.writes.retention import RetentionWrites

    renew = RetentionWrites._renew

    def as_from_the_deadline(self: Any, run_id: str, run: Any, kept_before: float, began: float, until: int) -> bool:
        due = json.loads(run.get("waiting") or "{}").get("due") if run.get("status") == "suspended" else None
        if isinstance(due, (int, float)) and due > began:
            until, began = max(until, write_expiry(due, self.settings) or until), due
        return renew(self, run_id, run, kept_before, began, until)

    monkeypatch.setattr(RetentionWrites, "_renew", as_from_the_deadline)
    found = first_violation()
    # an item of a live run past its TTL (the step's record, or a signal it still reads)
    assert found is not None and "live run" in found[1] and "TTL" in found[1], found


def test_a_recovery_that_counts_a_queue_wait_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break: every recovery counts towards the cap, taken by a worker or not, so a fleet outage
    # longer than the cap's leases fails runs that never had a fault (invariant 16).
    from workflows.core.storage import recovery
    from workflows.core.storage.writes import runs

    def counting(seen: Any, settings: Any) -> recovery.RecoveryClaim:
        decided = recovery.recovery_claim(seen, settings)
        return dataclasses.replace(decided, counted=True, lease_seconds=settings.lease_seconds)

    monkeypatch.setattr(runs, "recovery_claim", counting)
    found = first_violation()
    assert found is not None and "recovery attempts exhausted" in found[1], found


def test_a_lost_sends_copy_taken_for_a_first_delivery_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # Break: the second copy of a send whose response was lost is not marked (the soak's finding:
    # botocore's own retry), so its receiver runs a step whose first copy recorded its outcome.
    from workflows.sim import broker

    monkeypatch.setattr(broker.Envelope, "repeat", property(lambda self: False, lambda self, value: None))
    found = first_violation()
    assert found is not None and "steps ran" in found[1], found
