"""A batch cancel in a scenario: the client cancels, by a filter, runs of which some have ended,
some sleep and some are running, and the beats drive the batch through the real batch code
while processes die mid-chunk (the faults of any port call).

At the end: the batch completed, it selected every target run recorded as created before it (by
the clocks of the processes, which are skewed) and acted on each once (done or skipped, none
failed), and each target ended completed or cancelled, those asleep for days cancelled.
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import TYPE_CHECKING, Any

from ..batches import create_batch
from ..core.model.states import BatchState, RunStatus
from ..core.ops.calls import sleep
from ..decorators import workflow
from ..options import RunFilter
from . import workloads
from .invariants import final_item

if TYPE_CHECKING:
    from .world import Instance, World

TARGETS = (3, 6)  # how many target runs a scenario starts (inclusive range)
LONG_SLEEP = 3 * 86400.0  # a target asleep this long is still asleep when the batch acts: it must end cancelled
RATES = (0.5, 2.0, 50.0)  # runs per second: one run a chunk, a few, all at once


@workflow
def sim_batch_target(seconds: float) -> str:
    """A step, then a sleep: at the batch's time it has ended, sleeps, or runs its step."""
    workloads.sim_add(0, 700)
    sleep(seconds)
    return "slept"


TARGET = workloads.Workload("sim_batch_target", lambda r, k: [r.choice([0.0, 1.0, 40.0, LONG_SLEEP])],
                            lambda a: [("completed", "slept")])


@dataclasses.dataclass
class BatchScenario:
    """The targets of a batch cancel and when the client starts it."""

    targets: list[Instance]
    at: float
    rate: float
    batch_id: str | None = None
    final: dict[str, Any] | None = None  # the ended batch's item as first seen (TTL may delete it later)


def plan(world: World, seed: int, start: float) -> BatchScenario | None:
    """A quarter of the seeds (drawn apart from the world's own draws) run a batch cancel."""
    rng = random.Random(seed ^ 0xBA7C4)
    if rng.random() >= 0.25:
        return None
    from .world import Instance

    targets = []
    for index in range(rng.randint(*TARGETS)):
        key = f"s{seed}-b{index}"
        targets.append(Instance(TARGET, f"run-{key}", TARGET.make_args(rng, key), None, start))
    world.instances += targets
    return BatchScenario(targets, start + rng.uniform(5, 90), rng.choice(RATES))


def client_due(world: World, scenario: BatchScenario) -> bool:
    """Whether the client starts the batch now: its time has come and every target was started."""
    return scenario.batch_id is None and world.time >= scenario.at and all(t.started for t in scenario.targets)


def start(world: World, scenario: BatchScenario, engine: Any) -> None:
    """The client starts the batch (a retry after a crash starts another: each acts once per run)."""
    for target in scenario.targets:
        target.cancel_sent = True  # from here a target may end cancelled
    batch = create_batch(engine, "cancel", RunFilter(workflow=TARGET.name), rate=scenario.rate, reason="sim")
    scenario.batch_id = batch.batch_id


def moments(world: World) -> list[float]:
    """When a live batch's next chunk is due (or its driver's lease expires)."""
    return [b["due_at"] for b in world.store.batches.items.values() if b.get("due_at") is not None]


def finished(world: World, scenario: BatchScenario) -> bool:
    """Whether the batch has been started and has ended (and any other a retried start made)."""
    if scenario.batch_id is not None and scenario.final is None:
        ended = world.store.batches.items.get(("ended", scenario.batch_id))
        scenario.final = None if ended is None else dict(ended)
    return scenario.final is not None and not any(key[0] == "live" for key in world.store.batches.items)


def check_end(world: World, scenario: BatchScenario) -> None:
    """The batch completed having acted once on each target; each target ended as a cancel allows."""
    finished(world, scenario)
    item = scenario.final
    if item is None:
        world.violations.append(f"batch {scenario.batch_id} did not end")
        return
    counts = {k: int(item.get(k) or 0) for k in ("selected", "done", "failed", "skipped")}
    # Selected: every target whose recorded creation time is at most the batch's bound (the client's
    # clock at the batch's creation). Processes' clocks are skewed, so a target the client created a
    # moment before the batch, before it restarted with another skew, may be recorded after it.
    until = json.loads(item["selection"]).get("until")
    n = sum(1 for t in scenario.targets if (run := final_item(world, t.run_id)) is not None
            and (until is None or run["created_at"] <= until))
    if item["state"] != BatchState.COMPLETED or counts["selected"] != n or counts["failed"] or \
            counts["done"] + counts["skipped"] != n:
        world.violations.append(f"batch {scenario.batch_id} ended {item['state']} with {counts}, "
                                f"{n} of {len(scenario.targets)} target runs created before it; "
                                f"errors {item.get('errors')}")
    for target in scenario.targets:
        run = final_item(world, target.run_id)
        if target.args[0] == LONG_SLEEP and run is not None and run["status"] != RunStatus.CANCELLED:
            world.violations.append(f"run {target.run_id} asleep for days when batch {scenario.batch_id} "
                                    f"acted ended {run['status']}, not cancelled")
