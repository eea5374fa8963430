"""A client that reads what a run publishes while it runs (``get_event``, ``read_stream``) and
checks what it read against what the workflow publishes, in the order it publishes it.

``sim_events(n)`` appends stream entry ``i`` before it sets ``stage`` to ``part i``, and
appends ``"end"`` before it sets ``stage`` to ``done``. So a client that reads ``stage`` and
then the stream sees at least what was published before that stage, every entry it reads is
the workflow's own (in order, never one twice), and a stream read after the run ended holds
every entry. Reads of a run whose items retention has stamped are not checked (TTL deletes
them late and in any order).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..core.model.states import RunStatus
from ..events import lookup_event, stream_page

if TYPE_CHECKING:
    from ..core.engine import Engine
    from .world import Instance, World


def expected_stream(n: int) -> list[Any]:
    """The entries ``sim_events(n)`` appends, in order."""
    return [{"part": i, "total": 2 * i + 500} for i in range(n)] + ["end"]


def entries_before(stage: str | None, n: int) -> int:
    """How many stream entries were appended before ``stage`` was set."""
    if stage is None or stage == "started":
        return 0
    if stage == "done":
        return n + 1
    return int(stage.removeprefix("part ")) + 1


#: Reads of one run by the client, a few simulated seconds apart, while its stream is open.
READS, READ_EVERY = 6, 3.0


def read_and_check(world: World, engine: Engine, instance: Instance) -> bool:
    """Read ``stage`` once (no wait), then the whole stream; record a violation if they disagree.
    Whether the client is done reading (the stream was closed, or it read :data:`READS` times)."""
    run_id, n = instance.run_id, instance.args[0]
    found, text = lookup_event(engine.store, run_id, "stage")
    stage = engine.payloads.decode(text) if found else None
    page = stream_page(engine, run_id, 0)
    run = engine.store.find_run(run_id)
    instance.progress += 1
    if run is None or run.retain_until is not None:
        return True  # stamped for expiry: its items go late and in any order
    expected = expected_stream(n)
    stages = {None, "started", "done", *(f"part {i}" for i in range(n))}
    problems = []
    if stage not in stages:
        problems.append(f"stage {stage!r} is none the workflow sets")
    if page.entries != expected[:len(page.entries)]:
        problems.append(f"stream {page.entries} is not a prefix of {expected}")
    if stage in stages and len(page.entries) < entries_before(stage, n):
        problems.append(f"stage {stage!r} read before a stream of only {len(page.entries)} entries")
    if page.ended and run.status == RunStatus.COMPLETED and page.entries != expected:
        problems.append(f"the stream of the completed run is {page.entries}, not {expected}")
    if page.next_offset != len(page.entries):
        problems.append(f"next offset {page.next_offset} after {len(page.entries)} entries from 0")
    for problem in problems:
        world.violations.append(f"client read of run {run_id}: {problem} ({json.dumps(stage)})")
    if page.ended or instance.progress >= READS:
        return True
    instance.act_at = world.time + READ_EVERY  # read again while it runs
    return False
