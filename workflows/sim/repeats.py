"""The second copy of a send whose response was lost, as the simulator plays it (production:
``workflows.celery.repeats``): marked as a possible repeat and delayed, so its receiver reads what
is recorded before it runs the step. Such a copy may still run the step once: when nothing was
recorded yet (its first copy is late, still running, or was never delivered), which excuses it."""

from __future__ import annotations

from typing import Any

from ..core.execution.attempts import StepAddress
from ..core.model.join_layout import branch_shard, shard_partition
from ..core.model.records import StepMessage, attempt_seq, event_seq
from ..core.storage.writes.items import event_record
from ..memory import MemoryStore

#: How long the copy waits in its queue (``workflows.celery.repeats.REPEAT_DELAY``).
REPEAT_DELAY = 30.0


def recorded(store: MemoryStore, message: StepMessage) -> bool:
    """Whether a repeat of ``message`` finds what the step task's check finds (``core.ops.steps._recorded``):
    its branch's result, or this attempt's failure (or a later one), or the step's outcome. Read from
    the world's own tables, so the check neither meets a fault nor counts as a request."""
    branch = message.branch
    if branch is not None and (shard_partition(branch.join, branch_shard(branch.index)), branch.index) \
            in store.joins.items:
        return True
    partition, pos = StepAddress.of(message).key
    low, high = attempt_seq(pos, message.attempt), event_seq(pos)
    items: Any = store.events.items  # the memory tables' items, partitioned by hash key (``memory.items``)
    return any(event.is_outcome or (event.attempt or 0) >= message.attempt
               for key in list(items.partition(None, partition))
               if low <= key[1] <= high and (event := event_record(items[key])))
