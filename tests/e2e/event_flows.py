"""Workflows of the events and progress end-to-end test (imported by the test workers)."""

from __future__ import annotations

from workflows import set_event, sleep, step, wait_for_signal, workflow, write_stream


@step(name="e2e_events_chunk")
def chunk(n: int) -> int:
    return n * n


@workflow(name="e2e_events_progress")
def progress(parts: int) -> int:
    """Reports its progress while it works, then asks for an answer and publishes it."""
    set_event("stage", "working")
    total = 0
    for n in range(parts):
        total += chunk(n)
        write_stream({"part": n, "total": total})
    sleep(1)
    set_event("stage", "waiting")
    answer: str = wait_for_signal("answer")
    set_event("answer", answer)
    write_stream({"answer": answer})
    set_event("stage", "done")
    return total
