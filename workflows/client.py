"""The client API: start runs, inspect them, cancel them, complete hooks (``resume_hook``), send signals
and updates."""

from __future__ import annotations

import json
import math
import reprlib
import sys
import time
import uuid
import warnings
from typing import Any, Iterator, Mapping, Sequence

from . import codec
from .core.admission.debounce import DEBOUNCE_TAG
from .core.admission.delayed import start_time
from .core.background.update_requests import send_update, wait_for_answer
from .core.engine import Engine
from .core.model.failures import run_failure
from .core.model.hooks import refusal
from .core.model.names import check_name
from .core.model.priority import run_priority
from .core.model.records import EventRecord, Page, RunRecord, RunStatus, RunSummary
from .core.model.registry import WorkflowDef, check_arguments, get_workflow
from .core.model.states import OpKind
from .core.model.tokens import hash_token
from .core.ops.inbox import Waiting, waiting
from .core.storage.chains import chain_anchor, current_run, follow
from .core.storage.newest import STATUSES, newest_page
from .core.storage.ports import Store
from .core.storage.tags import check_tags, limit_count, parse_filter
from .debounce import Debounce, debounce_options, start_debounced
from .durations import Duration, to_seconds
from .errors import (
    HookClosed,
    HookNotFound,
    HookPayloadInvalid,
    InvalidChildOptions,
    InvalidTags,
    RunCancelled,
    RunEnded,
    RunTimedOut,
    SerializationError,
)
from .options import RunFilter, StartOptions, TimeRange, created_within, split_start_options
from .runtime import get_engine

MAX_KEY_LENGTH = 512


def _check_text(value: Any, what: str, limit: int = MAX_KEY_LENGTH) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise SerializationError(f"{what} must be a non-empty string of at most {limit} characters, "
                                 f"got {reprlib.repr(value)}")
    return value


def start_workflow(definition: WorkflowDef, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                   idempotency_key: str | None = None, tags: dict[str, str] | None = None,
                   debounce: Debounce | None = None, **fields: Any) -> RunHandle:
    """Start a run of ``definition``; nothing is stored if the arguments do not fit its
    signature or are not JSON data, or if ``tags`` break the rules (InvalidTags).
    ``debounce``: collapse starts with its key within its window (see ``workflows.debounce``)."""
    if idempotency_key is not None:
        _check_text(idempotency_key, "idempotency_key")
    if tags or debounce:
        checked = check_tags(tags)
        fields["tags"] = limit_count(check_tags({**checked, DEBOUNCE_TAG: debounce.key}) if debounce else checked)
    check_arguments(definition.fn, args, kwargs, f"workflow {definition.name!r}")
    engine, what = get_engine(), f"arguments of workflow {definition.name!r}"
    text = codec.dumps([list(args), kwargs], what=what, limit=engine.settings.max_payload_bytes)
    if debounce is not None:  # the run it joins is known only there: it puts a large payload in that run's prefix
        return RunHandle(start_debounced(engine, definition, text, debounce, **fields))
    run_id = str(uuid.uuid4())
    payload = engine.payloads.offload(text, what, run_id)  # the object, in the new run's prefix, before the run
    run_id, _ = engine.create_run(definition, payload, run_id=run_id, idempotency_key=idempotency_key, **fields)
    return RunHandle(run_id)


def start_with_options(definition: WorkflowDef, args: tuple[Any, ...], kwargs: dict[str, Any],
                       options: StartOptions) -> RunHandle:
    """Start a run of ``definition`` with its arguments and its start options (checked here).

    Raises:
        InvalidChildOptions: ``detached`` or ``parent_close_policy`` (they are for a child, inside a workflow).
        InvalidStartTime, InvalidDuration: a bad ``delay`` or ``start_at``.
    """
    if options.detached or options.parent_close_policy is not None:
        raise InvalidChildOptions("detached= and parent_close_policy= are options of a child run, started "
                                  "inside a workflow")
    debounce = debounce_options(options.debounce, options.debounce_key, options.debounce_max, options.idempotency_key)
    tags = None if options.tags is None else dict(options.tags) if isinstance(options.tags, Mapping) else options.tags
    begins = start_time(options.delay, options.start_at, get_engine().now())
    return start_workflow(definition, args, kwargs, idempotency_key=options.idempotency_key, tags=tags,
                          debounce=debounce, priority=run_priority(options.priority, definition.priority),
                          **({} if begins is None else {"start_at": begins}))


def _definition(workflow: Any) -> WorkflowDef:
    name = workflow if isinstance(workflow, str) else getattr(workflow, "name", workflow)
    return get_workflow(_check_text(name, "workflow name"))


def start(workflow: Any, *args: Any, **kwargs: Any) -> RunHandle:
    """Start a run of a workflow given by registered name (or by the workflow object) with these
    arguments. Start options (``idempotency_key``, ``tags``, ``debounce``...) go through
    :func:`apply_async` or ``wf.options(...).start(...)``; among ``kwargs``, one that names no
    parameter of the workflow is still taken as the option, with a ``DeprecationWarning``."""
    definition = _definition(workflow)
    kwargs, options = split_start_options(definition.fn, kwargs)
    return start_with_options(definition, args, kwargs, options)


def apply_async(workflow: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None,
                **options: Any) -> RunHandle:
    """Start a run of a workflow (by name or object) with ``args``, ``kwargs`` and start options
    (:class:`~workflows.options.StartOptions`): ``idempotency_key=`` (same key, same run),
    ``tags=`` (its search tags, see :func:`list_runs`), ``debounce="5s", debounce_key="k"``
    (optionally ``debounce_max="1m"``: starts with one key within the window collapse into one run,
    which starts with the last arguments once the window has passed, docs/flow-control.md),
    ``delay="10m"`` or ``start_at=<aware datetime>`` (Celery's ``countdown`` / ``eta``: the run is
    stored at once as ``delayed`` and starts then; ``cancel`` before that ends it unstarted)."""
    return start_with_options(_definition(workflow), tuple(args), dict(kwargs or {}), StartOptions(**options))


class RunHandle:
    """A run, by id. Every method reads the current stored state."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunHandle) and other.run_id == self.run_id

    def __hash__(self) -> int:
        return hash(self.run_id)

    def record(self) -> RunRecord:
        """The stored run."""
        return get_engine().store.get_run(self.run_id)

    def status(self) -> RunStatus:
        """The run's status, or, for a run that continued as new, the status of its chain's current
        run (``record().status`` is this run's own: ``continued``). One read of the run; one more
        for a run that continued (the chain's anchor names its latest run, ``core.storage.chains``)."""
        return RunStatus(last_of_chain(get_engine().store, self.run_id).status)

    def result(self, timeout: float | None = None, poll: float = 0.1) -> Any:
        """Wait for the run (following continue-as-new) to end; return its result.

        Raises:
            RunFailed, RunCancelled, RunTimedOut: how the run ended.
            TimeoutError: ``timeout`` (seconds, "90s" or a timedelta) passed first.
            InvalidDuration: ``timeout`` is not a duration.
        """
        deadline = None if timeout is None else time.monotonic() + to_seconds(timeout, what="result timeout")
        while True:
            run = last_of_chain(get_engine().store, self.run_id)
            if has_ended(run):
                return outcome(run)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"run {self.run_id} did not end within {timeout}s (status {run.status})")
            time.sleep(poll)
            poll = min(poll * 1.5, 1.0)

    def get_event(self, key: str, timeout: float | str | None = None, poll: float = 0.1) -> Any:
        """The latest value this run set for event ``key``, waiting until it is set (``timeout``
        None, the default: without limit; 0: look once; see :func:`workflows.get_event`)."""
        from .events import get_event

        return get_event(self.run_id, key, timeout, poll)

    def event_values(self) -> dict[str, Any]:
        """Every event key this run set, with its latest value (see :func:`workflows.events.event_values`)."""
        from .events import event_values

        return event_values(self.run_id)

    def read_stream(self, offset: int = 0) -> Any:
        """This run's progress stream from ``offset`` (a ``StreamPage``; see :func:`workflows.read_stream`)."""
        from .events import read_stream

        return read_stream(self.run_id, offset)

    def update(self, name: str, payload: Any = None, *, update_id: str | None = None,
               timeout: float | str | None = None, poll: float = 0.1) -> Any:
        """Send update ``name`` into this run and return its handler's answer (see
        :func:`workflows.update_run`)."""
        return update_run(self.run_id, name, payload, update_id=update_id, timeout=timeout, poll=poll)

    def history(self) -> list[EventRecord]:
        """The raw history records, in order (with the outcome the run's end carries: see
        ``core.model.records.with_last_outcome``)."""
        from .core.storage.timeline import run_history

        return run_history(get_engine().store, self.run_id)

    def events(self) -> list[dict[str, Any]]:
        """The history as a timeline: run start, every op record in order, run end."""
        from .core.storage.timeline import timeline

        return timeline(self.record(), self.history(), get_engine().payloads.resolve_record)

    def steps(self) -> list[dict[str, Any]]:
        """One record per step op: seq, name, status, attempts, started_at, finished_at, error."""
        from .core.storage.timeline import step_rows

        return step_rows(self.record(), self.history(), get_engine().payloads.resolve_record)

    def waiting(self) -> list[Waiting]:
        """The update requests, then the signals, sent to this run's chain and not taken yet, in
        the order the run takes them (one Query of the chain's signals, and its history)."""
        return waiting(get_engine().store, self.run_id)

    def cancel(self) -> None:
        """Request cancellation (see :func:`cancel`)."""
        cancel(self.run_id)

    def signal(self, name: str, payload: Any = None) -> None:
        """Send signal ``name`` to this run (see :func:`send_signal`)."""
        send_signal(self.run_id, name, payload)

    def fork(self, at: int, *, idempotency_key: str | None = None) -> RunHandle:
        """A new run reusing this run's outcomes below op ``at`` (see :func:`workflows.fork_run`)."""
        from .forking import fork_run

        return fork_run(self.run_id, at, idempotency_key=idempotency_key)

    def rerun(self, *, idempotency_key: str | None = None) -> RunHandle:
        """A new run of this failed run from its failed step (see :func:`workflows.rerun`)."""
        from .forking import rerun

        return rerun(self.run_id, idempotency_key=idempotency_key)

    def children(self) -> list[RunHandle]:
        """The child runs this run started, in start order."""
        return [RunHandle(json.loads(e.data or "{}")["run_id"]) for e in self.history()
                if e.kind == OpKind.CHILD and e.is_outcome]

    def parent(self) -> RunHandle | None:
        """The run that started this one as a child, if any."""
        parent = self.record().parent_run_id
        return RunHandle(parent) if parent else None

    def chain(self) -> list[RunHandle]:
        """Every run of this run's continue-as-new chain that is still stored, first to last
        (runs between the first and the current one expire retention after their own end). Each
        handle's ``status()`` is the chain's; ``record().status`` is that run's own."""
        store = get_engine().store
        run = store.get_run(self.run_id)
        while run.continued_from and (before := store.find_run(run.continued_from)) is not None:
            run = before
        chain = [RunHandle(run.run_id)]
        while run.status == RunStatus.CONTINUED and run.continued_to:
            after = store.find_run(run.continued_to)
            if after is None:  # expired: the chain goes on from its current run
                after = follow(store, run)
                if after.run_id == run.run_id:
                    break
            run = after
            chain.append(RunHandle(run.run_id))
        return chain


def last_of_chain(store: Store, run_id: str) -> RunRecord:
    """The run, or the last run of the continue-as-new chain it started (see ``core.storage.chains``)."""
    return current_run(store, run_id)


def has_ended(run: RunRecord) -> bool:
    """Whether a run (the last of its chain) has ended with an outcome."""
    return run.is_terminal and run.status != RunStatus.CONTINUED


def outcome(run: RunRecord) -> Any:
    """The result of a run that has ended; raise how it ended otherwise.

    Raises:
        RunFailed, RunCancelled, RunTimedOut: how the run ended.
    """
    if run.status == RunStatus.COMPLETED:
        return get_engine().payloads.decode(run.result)
    if run.status == RunStatus.FAILED:
        raise run_failure(run.run_id, run.error, run.result)
    if run.status == RunStatus.CANCELLED:
        raise RunCancelled(run.run_id)
    if run.status == RunStatus.TIMED_OUT:
        raise RunTimedOut(run.run_id)
    raise ValueError(f"run {run.run_id} has not ended ({run.status})")


def get_run(run_id: str) -> RunHandle:
    """Return a handle of an existing run. For the first run of a continue-as-new chain (the id
    ``start`` returned), its ``status()``, ``result()``, ``cancel()`` and ``signal()`` reach the
    chain's current run; ``record()``, ``history()``, ``events()`` and ``steps()`` are this run's own.

    Raises:
        RunNotFound: no run has this id.
    """
    get_engine().store.get_run(_check_text(run_id, "run_id"))
    return RunHandle(run_id)


def _check_status(status: Any) -> str | None:
    if status is None:
        return None
    if status not in STATUSES:  # a RunStatus compares equal to its value
        raise SerializationError(f"status must be one of {', '.join(STATUSES)}, got {reprlib.repr(status)}")
    return str(status)


#: The latest moment a time filter may name (the end of year 9999, as datetime can show it).
LATEST_EPOCH = 253_402_300_799.0


def _check_time(value: Any, what: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value)):
        raise SerializationError(f"{what} must be epoch seconds (a number), got {reprlib.repr(value)}")
    if value is not None and not 0 <= value <= LATEST_EPOCH:
        raise SerializationError(f"{what} must be epoch seconds from 0 (1970) to {LATEST_EPOCH:.0f} (year 9999), "
                                 f"got {reprlib.repr(value)}")
    return value


def _bad_cursor(cursor: Any) -> SerializationError:
    return SerializationError(f"invalid cursor {reprlib.repr(cursor)}: pass the next_cursor of an earlier page")


def _page(given_cursor: str | None, summaries: bool = False, **query: Any) -> Page[Any]:
    store = get_engine().store
    try:
        return store.list_run_summaries(**query) if summaries else store.list_runs(**query)
    except (ValueError, SerializationError) as exc:  # the store could not decode the cursor
        raise _bad_cursor(given_cursor) from exc


def list_runs(status: str | RunStatus | None = None, workflow: Any = None, limit: int = 50,
              cursor: str | None = None, *, tag: str | tuple[str, str] | None = None,
              created: TimeRange | None = None, **deprecated: Any) -> Page[RunRecord]:
    """One page of runs, newest first; ``workflow`` takes a name or the workflow object.

    Without ``status`` or ``workflow`` the runs of every status are merged newest first
    (``core/storage/newest.py``: one Query per status a page, full pages, one cursor). ``tag``
    (``"key=value"``) pages through the runs carrying that tag (its index, no Scan); it
    combines with ``workflow`` and ``created``, not with ``status``. ``created`` keeps the runs
    created within a :class:`~workflows.options.TimeRange` (``since=`` / ``until=`` keywords:
    deprecated, for one release).

    Raises:
        SerializationError: a filter, the limit or the cursor is invalid (naming which).
        InvalidTags: ``tag`` is not ``key=value`` within the tag rules, or comes with ``status``.
        InvalidArguments: ``created`` is not a TimeRange, or comes with ``since=`` / ``until=``.
    """
    window = created_within(created, deprecated, "list_runs")
    return _listing(False, RunFilter(status, workflow, tag, window), limit, cursor)


def list_run_summaries(status: str | RunStatus | None = None, workflow: Any = None, limit: int = 50,
                       cursor: str | None = None, *, created: TimeRange | None = None,
                       **deprecated: Any) -> Page[RunSummary]:
    """:func:`list_runs` from the listing index alone: each item a :class:`RunSummary` (id, workflow,
    status, created and ended times, parent, schedule), one Query a page and no read of the runs.

    Raises:
        SerializationError: a filter, the limit or the cursor is invalid (naming which).
        InvalidArguments: ``created`` is not a TimeRange, or comes with ``since=`` / ``until=``.
    """
    window = created_within(created, deprecated, "list_run_summaries")
    return _listing(True, RunFilter(status, workflow, created=window), limit, cursor)


def _listing(summaries: bool, wanted: RunFilter, limit: Any, cursor: Any) -> Page[Any]:
    """One page of the runs ``wanted`` picks, its filters checked first (``summaries``: index items only)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise SerializationError(f"limit must be an int in 1..1000, got {reprlib.repr(limit)}")
    name, tag, created = getattr(wanted.workflow, "name", wanted.workflow), wanted.tag, wanted.created or TimeRange()
    if name is not None:
        _check_text(name, "workflow")
    status = _check_status(wanted.status)
    since, until = _check_time(created.since, "since"), _check_time(created.until, "until")
    if cursor is not None and not isinstance(cursor, str):
        raise _bad_cursor(cursor)
    if tag is not None:
        if status is not None:
            raise InvalidTags("list_runs(tag=...) does not combine with status=: filter the page by status, "
                              "or list by status and workflow")
        return _page(cursor, tag=parse_filter(tag), workflow=name, limit=limit, cursor=cursor,
                     created=TimeRange(since, until))
    if status is not None or name is not None:
        return _page(cursor, summaries, status=status, workflow=name, limit=limit, cursor=cursor,
                     created=TimeRange(since, until))
    try:
        page = newest_page(get_engine().store, limit, cursor, since, until)
    except SerializationError:
        raise _bad_cursor(cursor) from None
    if summaries:
        return page
    return Page(get_engine().store.get_runs([run.run_id for run in page.items]), page.next_cursor)


def count_runs(status: str | RunStatus | None = None, *, created: TimeRange | None = None, cap: int = 10_000,
               **deprecated: Any) -> dict[str, tuple[int, bool]]:
    """How many runs there are of ``status`` (of every status if None), created within ``created``
    (a :class:`~workflows.options.TimeRange`): ``{status: (count, capped)}``, ``capped`` when
    counting stopped at ``cap``. ``since=`` / ``until=`` keywords: deprecated, for one release.

    One Query (Select COUNT) of the status index per status and page; the read cost grows with
    the count, so ``cap`` bounds it.

    Raises:
        SerializationError: a status, a bound or the cap is invalid (naming which).
        InvalidArguments: ``created`` is not a TimeRange, or comes with ``since=`` / ``until=``.
    """
    created = created_within(created, deprecated, "count_runs")
    if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= 1_000_000:
        raise SerializationError(f"cap must be an int in 1..1000000, got {reprlib.repr(cap)}")
    status = _check_status(status)
    since, until = _check_time(created.since, "since"), _check_time(created.until, "until")
    store = get_engine().store
    return {s: store.count_runs(s, since=since, until=until, cap=cap) for s in ([status] if status else STATUSES)}


def iter_runs(**filters: Any) -> Iterator[RunRecord]:
    """Every run matching ``filters``, across pages."""
    cursor = None
    while True:
        page = list_runs(cursor=cursor, **filters)
        yield from page
        if not page.next_cursor:
            return
        cursor = page.next_cursor


def cancel(run_id: str) -> None:
    """Cancel a run at its next suspension point; its timers, hooks and children go with it.

    Cancelling an ended run does nothing.

    Raises:
        RunNotFound: no run has this id.
    """
    cancel_run(get_engine(), run_id)


def cancel_run(engine: Engine, run_id: str) -> None:
    """:func:`cancel` on a given engine (the current run of a continue-as-new chain)."""
    run = engine.store.get_run(_check_text(run_id, "run_id"))
    if not run.is_terminal or run.status == RunStatus.CONTINUED:
        engine.request_cancel(run_id)


def send_signal(run_id: str, name: str, payload: Any = None) -> None:
    """Store a signal for a run; its next ``wait_for_signal(name)`` receives it, in send order.
    A signal to any run of a continue-as-new chain is for the chain: its current run, or a later
    one, receives it (docs/signals.md).

    Raises:
        RunNotFound: no run has this id.
        RunEnded: the run has ended.
        SerializationError / PayloadTooLarge: the payload is not acceptable JSON data.
    """
    signal_run(get_engine(), run_id, name, payload)


def signal_run(engine: Engine, run_id: str, name: str, payload: Any = None) -> None:
    """:func:`send_signal` on a given engine."""
    check_name(_check_text(name, "signal name", 256), "signal name")
    data = codec.dumps(payload, what=f"payload of signal {name!r}", limit=engine.settings.max_payload_bytes)
    run = current_run(engine.store, _check_text(run_id, "run_id"))
    anchor = chain_anchor(run)  # signals are kept under it: their objects too
    data = engine.payloads.offload(data, f"payload of signal {name!r}", anchor)  # the object before its reference
    # The signal and the wake it implies are one write, so the run resumes even if this process dies
    # now. It is kept under the chain's anchor and wakes the chain's current run, only while that run
    # is live: one that continued meanwhile is followed to its successor (nothing is lost in between).
    # It is ordered after every signal stored before (not by this host's clock: core.storage.rules.signal_time);
    # a signal stored meanwhile and ordered after it makes this one be sent again, after that one.
    while not run.is_terminal and engine.store.put_signal(anchor, name, data, wake=run.run_id) is None:
        run = current_run(engine.store, run.run_id)  # it ended (or continued) meanwhile
    if run.is_terminal:
        raise RunEnded(f"run {run_id} has ended ({run.status}); signal {name!r} not sent")
    engine.resume_if_suspended(run.run_id)


def update_run(run_id: str, name: str, payload: Any = None, *, update_id: str | None = None,
               timeout: Duration | None = None, poll: float = 0.1) -> Any:
    """Send update ``name`` with ``payload`` into run ``run_id`` and return its handler's answer.

    Args:
        update_id: the update's id (letters, digits, ``_ . - : / @``); a new one if None. Sending
            again with the same id never runs the handler twice: it returns the same answer.
        timeout: how long to wait for the answer (seconds, ``"30s"`` or a timedelta); None waits
            without limit. The request stays stored after a timeout: the run may still apply it.
        poll: the first pause between two looks (it grows to one second).

    Raises:
        UpdateRefused: the run has no handler ``name``, or its validator refused the payload.
        UpdateFailed: the handler raised (its message).
        UpdateTimeout: no answer within ``timeout``.
        UpdateRunEnded: the run (the last run of its continue-as-new chain) ended first.
        RunNotFound: no run has this id.
        SerializationError / PayloadTooLarge: the payload is not acceptable JSON data.
    """
    engine = get_engine()
    update_id, first = send_update(engine, run_id, name, payload, update_id)
    text = wait_for_answer(engine.store, first, update_id, timeout, poll=poll)
    return engine.payloads.decode(text)


def resume_hook(token: str, payload: Any = None) -> RunHandle:
    """Complete the hook with this token once (deliver its payload, wake its run); return its run.

    Raises:
        HookNotFound, HookExpired, HookClosed, HookAlreadyResumed: the token was refused.
        HookPayloadInvalid: the payload does not match the hook's schema (the hook stays pending).
        SerializationError / PayloadTooLarge: the payload is not acceptable JSON data.
    """
    return complete_hook(get_engine(), token, payload)


def complete_hook(engine: Engine, token: str, payload: Any = None) -> RunHandle:
    """:func:`resume_hook` on a given engine: complete the hook with its payload and wake its run."""
    if not isinstance(token, str) or not token or len(token) > 256:
        raise HookNotFound()
    data = codec.dumps(payload, what="hook payload", limit=engine.settings.max_payload_bytes)
    token_hash = hash_token(token)
    hook = engine.store.get_hook(token_hash)
    refused = refusal(hook, engine.now())
    if refused is not None or hook is None:
        raise refused or HookNotFound()
    if engine.store.get_run(hook.run_id).is_terminal:
        engine.store.close_hooks(hook.run_id)
        raise HookClosed(f"the run of hook {hook.name!r} has ended")
    if hook.schema:
        data = codec.dumps(validate_payload(hook.schema, codec.loads(data), hook.name), what="hook payload",
                           limit=engine.settings.max_payload_bytes)
    data = engine.payloads.offload(data, "hook payload", hook.run_id)  # the object before the record referencing it
    try:
        engine.store.complete_hook(token_hash, data)  # the hook completed and its run woken, in one write
    except HookClosed:
        engine.store.close_hooks(hook.run_id)
        raise
    engine.resume_if_suspended(hook.run_id)
    return RunHandle(hook.run_id)


def validate_payload(schema: str, payload: Any, hook_name: str) -> Any:
    """Check a payload against a hook's pydantic model (or, if the model is not loaded here,
    its stored JSON schema's required fields); never imports anything."""
    info = json.loads(schema)
    module_name, _, qualname = info.get("ref", "").partition(":")
    model: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        model = getattr(model, part, None) if model is not None else None
    if model is not None and hasattr(model, "model_validate"):
        try:
            return model.model_validate(payload).model_dump(mode="json")
        except Exception as exc:
            raise HookPayloadInvalid(f"payload for hook {hook_name!r} does not match its schema: {exc}") from None
    required = info.get("json", {}).get("required", [])
    if not isinstance(payload, dict) or any(key not in payload for key in required):
        raise HookPayloadInvalid(f"payload for hook {hook_name!r} must be an object with fields {required}")
    return payload


#: Old names of this module, for one release (a ``DeprecationWarning``): a hook is *completed*;
#: a *resume* is a run's replay (docs/architecture.md, glossary).
_RENAMED = {"resume_hook_on": "complete_hook"}


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module 'workflows.client' has no attribute {name!r}")
    warnings.warn(f"workflows.client.{name} is now workflows.client.{new} (the old name goes in the next release)",
                  DeprecationWarning, stacklevel=2)
    return globals()[new]
