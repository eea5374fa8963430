"""Store contract: a run keeps its priority level (stored on the run item, absent for normal),
and a claim by recovery returns it, so the re-sent resume goes at the same level."""

from __future__ import annotations

from .support import run_record, start


def test_a_run_keeps_its_priority_level(store, clock) -> None:  # type: ignore[no-untyped-def]
    record = run_record(store, priority="high")
    assert store.create_run(record) == (record.run_id, True)
    assert store.get_run(record.run_id).priority == "high"
    assert store.get_run(start(store)).priority is None
    clock.advance(store.settings.lease_seconds * 3)
    claimed = store.claim_recovery(store.get_run(record.run_id))
    assert claimed is not None and claimed.priority == "high"
