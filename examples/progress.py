"""Events and progress: an import that reports how far it got, and asks a person to confirm.

A client reads the run while it runs: ``get_event(run_id, "stage")`` waits for a value, and
``read_stream(run_id, offset)`` returns the progress entries from an offset.
"""

from __future__ import annotations

from workflows import set_event, step, wait_for_signal, workflow, write_stream


@step
def import_batch(source: str, batch: int) -> int:
    """Import one batch of rows; return how many."""
    return 100 + batch


@workflow
def import_rows(source: str, batches: int) -> dict[str, int | bool]:
    set_event("stage", "importing")
    rows = 0
    for batch in range(batches):
        rows += import_batch(source, batch)
        write_stream({"batch": batch, "rows": rows})  # one progress entry per batch
    set_event("stage", "awaiting confirmation")
    set_event("rows", rows)
    confirmed: bool = wait_for_signal("confirm", timeout="1d")
    set_event("stage", "done")
    return {"rows": rows, "confirmed": confirmed}
