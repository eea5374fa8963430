"""``patched(id)`` and ``deprecate_patch(id)``: change a workflow while runs of it are in flight.

A patch is a branch point recorded in the history. The first time a run reaches
``patched("id")`` it records a ``patch`` marker at the next op position and takes the new
path (True). A replay returns what was recorded:

* the position holds the marker ``id``: True (the position is consumed, as any op's);
* the position holds another op, or an op of the old code is in flight there (the run's
  cursor and ``waiting``): the history was recorded by code without this patch, so False,
  and the position is *not* consumed, so the old code's ops keep their positions.

A run that has not reached the point yet takes the new path, whatever code started it.
Retiring a patch (docs/versioning.md): once no run that took the old path is live, replace
``if patched("id"): new else: old`` by ``deprecate_patch("id"); new``, which consumes the
marker where one is recorded and records nothing; once no run holding a marker is live,
remove that call too.
"""

from __future__ import annotations

from ...errors import InvalidArguments
from ..model.control import StaleHistory, Suspend
from ..model.records import OpKind
from ..replay.context import WorkflowContext
from ..replay.updates import replay_recorded
from .calls import _context

MAX_PATCH_ID = 256


def patched(patch_id: str) -> bool:
    """Inside a workflow: whether this run takes the new path of change ``patch_id``.

    True for a run that reaches this call for the first time (a marker is recorded), False
    for a run whose history was recorded by code without the patch at this point.
    """
    return is_patched(_context("patched"), _checked(patch_id))


def deprecate_patch(patch_id: str) -> None:
    """Inside a workflow: the new path of ``patch_id`` is the only one left. Consumes the
    patch's marker where a run recorded one, records nothing otherwise."""
    ctx = _context("deprecate_patch")
    patch_id = _checked(patch_id)
    replay_recorded(ctx)  # updates handled before this point come first (core.replay.updates)
    if _holds_marker(ctx, patch_id):
        ctx.next_op(OpKind.PATCH, patch_id)


def is_patched(ctx: WorkflowContext, patch_id: str) -> bool:
    """:func:`patched` in a given context; one answer per patch id and replay."""
    known = ctx.patches.get(patch_id)
    if known is None:
        known = ctx.patches[patch_id] = _decide(ctx, patch_id)
    return known


def _decide(ctx: WorkflowContext, patch_id: str) -> bool:
    if ctx.halted is not None:
        raise Suspend()  # the code swallowed a suspension and went on: stop it here
    replay_recorded(ctx)  # updates handled before this point come first (core.replay.updates)
    pos, run = ctx.pos, ctx.run
    event = ctx.history.outcomes.get(pos)
    if event is None and pos < run.cursor:
        ctx.next_op(OpKind.PATCH, patch_id)  # every op before the cursor has an outcome: reload
    if event is not None and not _holds_marker(ctx, patch_id):
        return False  # the old code recorded another op here
    if event is None and run.cursor == pos and run.waiting:
        return False  # an op of the old code is in flight here
    pos, event = ctx.next_op(OpKind.PATCH, patch_id)
    if event is None:
        event = ctx.record(pos, OpKind.PATCH, "recorded", name=patch_id)
        if (event.kind, event.name) != (OpKind.PATCH.value, patch_id):
            raise ctx.halt(StaleHistory(pos))  # a resume of other code took the position first: replay
    return True


def _holds_marker(ctx: WorkflowContext, patch_id: str) -> bool:
    event = ctx.history.outcomes.get(ctx.pos)
    return event is not None and (event.kind, event.name) == (OpKind.PATCH.value, patch_id)


def _checked(patch_id: str) -> str:
    if not isinstance(patch_id, str) or not patch_id or len(patch_id) > MAX_PATCH_ID:
        raise InvalidArguments(f"a patch id must be a non-empty string of at most {MAX_PATCH_ID} characters, "
                               f"got {patch_id!r}")
    return patch_id
