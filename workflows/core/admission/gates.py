"""What a run passes before its first op: its start time, its debounce window, then its workflow's limit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.records import RunRecord
from ..model.registry import WorkflowDef
from .debounce import hold_debounced
from .delayed import hold_delayed
from .workflow_slots import admit

if TYPE_CHECKING:
    from ..engine import Engine


def pass_gates(engine: Engine, definition: WorkflowDef, run: RunRecord) -> bool | None:
    """True: the run may go on; False: it waits (parked with a timer, this resume is done);
    None: read the run again and retry."""
    passed = hold_delayed(engine, run)
    if passed is True:
        passed = hold_debounced(engine, run)
    return admit(engine, definition, run) if passed is True else passed
