"""Updates: a request sent into a running run, answered by a handler the workflow declares.

A workflow declares handlers with ``on_update(name, handler, validator=None)``. A client's request
is stored like a signal (under the chain's anchor, in the signals table, one transaction with the
wake of the run), at the key ``~update#<update id>``: a retried request with the same id is
stored once. A run handles its requests at its **frontier**: the first op position of a replay
without a recorded outcome, when nothing is in flight there (a new op, or a sleep, a signal or
hook wait, a child's result the run waits for, or a ``first_of`` race without step candidates; not a
dispatched step, a fan-out or a race with step candidates, whose outcome or branches a worker writes
at that position). There, in send order, each request is

* **refused** when the run has no handler of its name or the validator raises: its answer item is
  put and the request deleted (one transaction); nothing enters the run's history;
* else **handled**: the handler runs (synchronous, deterministic code over the workflow's state;
  no durable call) and an ``update`` op record (the request) takes the frontier's position, with
  the answer item (the handler's value or error) and the request's delete, in one transaction
  while the run is live. The waiting op moves one position on (with its due time).

A replay that meets an ``update`` record runs the handler again with the recorded request (its
effects on the workflow's state are the same), before the op that follows. Answer items are at
:func:`answer_seq` of the update id in the run's history partition (a negative range no op takes),
so they expire with the run (invariant 14); the client reads them with one GetItem.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ...errors import DurableCallInUpdate, NonDeterminismError, NotInWorkflow, RegistrationError, describe
from ..model.control import ContinueAsNew, StaleHistory, Suspend
from ..model.embed import embed, unembed
from ..model.join_layout import fan_out_width
from ..model.names import check_name
from ..model.records import EventRecord, OpKind, SignalRecord, event_seq
from ..model.states import EventStatus
from ..storage.chains import MAX_HOPS, chain_anchor
from .commands import AnswerUpdate, DropRequests, RefuseUpdate
from .commit import apply

if TYPE_CHECKING:
    from ..storage.ports import Store
    from .context import WorkflowContext

#: The signal name requests are stored under (no signal name holds ``~``, so none collides).
REQUEST_NAME = "~update"
#: Answer items: ``ANSWER_SEQ_BASE + (hash of the update id mod ANSWER_SEQ_SPAN)``.
ANSWER_SEQ_BASE = -5 * 10**15
ANSWER_SEQ_SPAN = 10**15
#: Waits a request may be handled before: their outcome is written by a resume of the run itself
#: (or by a timer whose write then fails harmlessly), never by a worker at that position.
DISPLACEABLE = frozenset({OpKind.SLEEP.value, OpKind.SIGNAL.value, OpKind.HOOK_WAIT.value, OpKind.CHILD_RESULT.value})


def answer_seq(update_id: str) -> int:
    """The history sort key of update ``update_id``'s answer (a 50-bit hash: the item also holds the
    id, and a reader ignores an item of another id)."""
    digest = hashlib.sha256(update_id.encode()).digest()
    return ANSWER_SEQ_BASE + int.from_bytes(digest[:8], "big") % ANSWER_SEQ_SPAN


def is_answer_seq(seq: int) -> bool:
    """Whether history sort key ``seq`` is in the range of answer items."""
    return ANSWER_SEQ_BASE <= seq < ANSWER_SEQ_BASE + ANSWER_SEQ_SPAN


def request_key(update_id: str) -> str:
    """The signals-table key of update ``update_id``'s request."""
    return f"{REQUEST_NAME}#{update_id}"


def check_update_id(update_id: Any) -> str:
    """An update id, or InvalidName (the rules of names: letters, digits, ``_ . - : / @``)."""
    return check_name(update_id, "update id")


@dataclass(frozen=True)
class Handler:
    """A declared update handler and its optional validator."""

    fn: Callable[[Any], Any]
    validator: Callable[[Any], Any] | None = None


@dataclass
class UpdateState:
    """One replay's updates: the handlers declared so far and the ids its history answered."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    handled: set[str] = field(default_factory=set)
    frontier_seen: bool = False
    running: str | None = None  # the handler (or validator) running now, if one is
    #: The run's cursor as stored, once an update moved the replay's copy on (``_advance``): what a
    #: lease renewal's condition names until the next write of the cursor.
    stored_cursor: int | None = None


def on_update(name: str, handler: Callable[[Any], Any], validator: Callable[[Any], Any] | None = None) -> None:
    """Declare the handler of updates ``name`` in this workflow (before its first durable call).

    ``handler(payload)`` runs between two durable calls of the workflow and returns the answer
    (JSON data); it may read and change the workflow's state but make no durable call (no step,
    wait or op: that fails the update with :class:`DurableCallInUpdate`). ``validator(payload)``,
    if given, runs first and raises to refuse the request (the caller gets ``UpdateRefused``
    with its message); it must not change the state.

    Raises:
        NotInWorkflow: called outside a workflow.
        RegistrationError: the handler or validator is not callable.
        InvalidName: the name breaks the rules of names.
    """
    from .context import current_workflow  # the context imports this module (its update state)

    ctx = current_workflow()
    if ctx is None:
        raise NotInWorkflow("on_update() can only be called inside a @workflow function")
    check_name(name, "update name")
    if not callable(handler) or (validator is not None and not callable(validator)):
        raise RegistrationError(f"update {name!r}: the handler and the validator must be callables")
    ctx.updates.handlers[name] = Handler(handler, validator)


def before_op(ctx: WorkflowContext) -> None:
    """At each durable call: replay the updates recorded before it, and at the frontier handle the
    requests waiting (``WorkflowContext.next_op`` calls this)."""
    state = ctx.updates
    if state.running is not None:
        raise DurableCallInUpdate(f"update handler {state.running!r} made a durable call: handlers and "
                                  "validators may only read and change the workflow's state")
    replay_recorded(ctx)
    if ctx.history.outcomes.get(ctx.pos) is None and not state.frontier_seen:
        state.frontier_seen = True
        if state.handlers and _free(ctx, ctx.pos):
            _handle_requests(ctx)


def replay_recorded(ctx: WorkflowContext) -> None:
    """Replay the updates recorded at the replay's position, so what comes next reads the position
    after them (also for code that peeks at the next position, as ``patched()`` does)."""
    while (event := ctx.history.outcomes.get(ctx.pos)) is not None and event.kind == OpKind.UPDATE.value:
        _replay(ctx, event)


def _free(ctx: WorkflowContext, pos: int) -> bool:
    """Whether an update may take op position ``pos`` (a frontier without a recorded outcome)."""
    run = ctx.run
    if pos != run.cursor:
        return pos > run.cursor
    return not run.waiting or displaceable(run.waiting)


def displaceable(waiting: dict[str, Any]) -> bool:
    """Whether the wait stored as ``waiting`` may move one position on for an update: a sleep, a
    signal, hook or child wait, and a ``first_of`` race without step candidates (theirs are branches
    of a join at the race's position, which cannot move)."""
    if waiting.get("kind") == OpKind.FIRST_OF.value:
        return fan_out_width(str(waiting.get("name"))) is None
    return waiting.get("kind") in DISPLACEABLE


def _advance(ctx: WorkflowContext, pos: int) -> None:
    """Go past the update at ``pos``; the op that waited there (the cursor) is now the next one."""
    ctx.pos = pos + 1
    if ctx.run.cursor == pos:
        if ctx.updates.stored_cursor is None:
            ctx.updates.stored_cursor = pos
        ctx.run = dataclasses.replace(ctx.run, cursor=pos + 1)


def _call(ctx: WorkflowContext, name: str, fn: Callable[[Any], Any], value: Any) -> Any:
    """Run a handler or validator, marked as running (a durable call in it raises DurableCallInUpdate)."""
    ctx.updates.running = name
    try:
        return fn(value)
    except ContinueAsNew as exc:
        raise DurableCallInUpdate(f"update handler {name!r} called continue_as_new()") from exc
    finally:
        ctx.updates.running = None


def _replay(ctx: WorkflowContext, event: EventRecord) -> None:
    """Run the handler of a recorded update again (its answer is the recorded one)."""
    pos, name = ctx.pos, event.name or ""
    info, payload = unembed(event.data or "{}", "payload")
    ctx.updates.handled.add(str(info.get("id")))
    handler = ctx.updates.handlers.get(name)
    if handler is None:
        ctx.fatal = NonDeterminismError(pos, f"update {name}", "no handler of that name declared before it",
                                        recorded_by=ctx.run.code_version,
                                        replayed_by=ctx.engine.code_version(ctx.run.workflow))
        raise ctx.halt(Suspend())
    value = ctx.decode(payload)
    try:
        _call(ctx, name, handler.fn, value)
    except Exception:  # noqa: BLE001 - it failed the first time too: its answer says so
        pass
    _advance(ctx, pos)


def before_signal(ctx: WorkflowContext, pos: int, name: str, kind: OpKind = OpKind.SIGNAL) -> int:
    """A signal wait (or a ``first_of`` race without step candidates: ``kind``) at ``pos`` is about to
    take a signal: first handle the requests waiting now (read after the signal, so an update a client
    sent before that signal is among them); return the wait's position after the updates recorded
    (``waits.wait_for_signal`` and ``first.first_of`` call this)."""
    if not ctx.updates.handlers or not _free(ctx, pos):
        return pos
    ctx.pos = pos  # the wait has recorded nothing: the updates come first
    _handle_requests(ctx)
    ctx.pos += 1
    ctx.op = (ctx.pos - 1, kind.value, name)
    return ctx.pos - 1


def request_order(request: SignalRecord) -> tuple[int, str]:
    """Where a waiting request is handled: by its ``order_number`` (the store's order), or by its
    sender's clock for a request stored before requests had one."""
    number = request.order_number if request.order_number is not None else int(request.sent_at * 1e9)
    return number, request.signal_key


def _handle_requests(ctx: WorkflowContext) -> None:
    """Refuse or handle, in send order, every request waiting for the run's chain."""
    anchor = chain_anchor(ctx.run)
    requests = sorted(ctx.store.signals(anchor, REQUEST_NAME), key=request_order)
    for request in requests:
        info, payload = unembed(request.payload or "{}", "payload")
        update_id, name = str(info["id"]), str(info["name"])
        if update_id in ctx.updates.handled or answered_before(ctx.store, ctx.run.continued_from, update_id):
            apply(ctx.store, DropRequests(anchor, [request.signal_key]))  # a retry of an answered update
            continue
        handler = ctx.updates.handlers.get(name)
        value = ctx.decode(payload)
        refusal = f"run {ctx.run.run_id} has no update handler {name!r}" if handler is None else None
        if handler is not None and handler.validator is not None:
            try:
                _call(ctx, name, handler.validator, value)
            except Exception as exc:  # noqa: BLE001 - the validator's refusal, given to the caller
                refusal = str(exc) or type(exc).__name__
        if refusal is not None or handler is None:
            answer = _answer(ctx, update_id, EventStatus.REFUSED, error=refusal)
            apply(ctx.store, RefuseUpdate(answer, request))  # False: answered already, or the run ended
            continue
        _record(ctx, Received(update_id, name, payload, value, request), handler)


@dataclass(frozen=True)
class Received:
    """An update request taken from the inbox: its id, its handler's name, its payload as sent and
    decoded, and the request's item."""

    update_id: str
    name: str
    payload: str | None
    value: Any
    request: SignalRecord


def _record(ctx: WorkflowContext, received: Received, handler: Handler) -> None:
    """Run the handler and record the update at the frontier with its answer (or re-replay)."""
    pos, name, update_id = ctx.pos, received.name, received.update_id
    try:
        result = _call(ctx, name, handler.fn, received.value)
        answer = _answer(ctx, update_id, EventStatus.COMPLETED, data=ctx.encode(result, f"answer of update {name!r}"))
    except Exception as exc:  # noqa: BLE001 - the update failed, the run goes on
        answer = _answer(ctx, update_id, EventStatus.FAILED, error=describe(exc))
    record = EventRecord(run_id=ctx.run.run_id, seq=event_seq(pos), kind=OpKind.UPDATE.value, status=answer.status,
                         at=answer.at, name=name, data=embed({"id": update_id}, received.payload or "null"),
                         error=answer.error)
    if not apply(ctx.store, AnswerUpdate(record, answer, received.request, ctx.resume_id)):
        raise ctx.halt(StaleHistory(pos))  # another resume took the position (or the run ended): re-read
    ctx.history.add(record)
    ctx.engine.cache.remember(record)
    ctx.updates.handled.add(update_id)
    _advance(ctx, pos)


def _answer(ctx: WorkflowContext, update_id: str, status: str, *, data: str | None = None,
            error: str | None = None) -> EventRecord:
    return EventRecord(run_id=ctx.run.run_id, seq=answer_seq(update_id), kind=OpKind.UPDATE.value, status=status,
                       at=ctx.now(), name=update_id, data=data, error=error)


def find_answer(store: Store, run_id: str, update_id: str) -> EventRecord | None:
    """The answer run ``run_id`` gave update ``update_id`` (one GetItem), or None."""
    record = store.get_event(run_id, answer_seq(update_id))
    return record if record is not None and record.name == update_id else None


def answered_before(store: Store, run_id: str | None, update_id: str) -> bool:
    """Whether run ``run_id`` or a run its chain continued from answered ``update_id`` (a retry
    stored again after the run that answered it continued as new)."""
    for _ in range(MAX_HOPS):
        if run_id is None:
            return False
        if find_answer(store, run_id, update_id) is not None:
            return True
        run = store.find_run(run_id)
        run_id = run.continued_from if run is not None else None
    return False
