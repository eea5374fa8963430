"""Batch operations: cancel, signal, rerun or tag the runs a filter selects, throttled and resumable.

A batch is one item in the store (``core/model/batches.py``): its operation, its filter, the cursor of
the listing it walks and its counts. ``api.py`` starts, reads, lists and stops batches;
``driver.py`` drives them a chunk at a time (beat, the CLI, any process). See docs/guide.md.
"""

from ..core.model.batches import BatchRecord
from ..options import RunFilter
from .api import (
    batch_cancel,
    batch_rerun,
    batch_signal,
    batch_tag,
    create_batch,
    get_batch,
    list_batches,
    start_batch,
    stop_batch,
)
from .driver import drive_batch, drive_due_batches, run_chunk

__all__ = ["BatchRecord", "RunFilter", "batch_cancel", "batch_rerun", "batch_signal", "batch_tag", "create_batch",
           "drive_batch", "drive_due_batches", "get_batch", "list_batches", "run_chunk", "start_batch", "stop_batch"]
