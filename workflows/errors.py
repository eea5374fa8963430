"""Every error the library raises.

Tree::

    WorkflowError
    ├── ConfigurationError
    │   └── InvalidName*
    ├── NotInWorkflow                a workflow-only call made outside a workflow
    ├── RegistrationError            duplicate name, bad decorator option
    │   ├── InvalidName*
    │   └── InvalidPriority*
    ├── InvalidInput                 a value given to the library breaks its rules (names the value and the rule)
    │   ├── InvalidName*             a workflow, step, queue or signal name with characters it cannot hold
    │   ├── InvalidArguments         arguments that do not fit the function (also TypeError)
    │   ├── InvalidTags*             run tags that break the rules (also ValueError)
    │   ├── InvalidDuration          (also ValueError)
    │   ├── InvalidDebounce          bad debounce window, key or cap of a start (also ValueError)
    │   ├── InvalidSchedule          bad cron, time zone, interval or policy (also ValueError)
    │   ├── InvalidStartTime         a bad delay or start time of a start (also ValueError)
    │   ├── InvalidChildOptions      a bad parent-close policy, or child options outside a workflow (also ValueError)
    │   ├── InvalidPriority*         a priority that is not high, normal or low (also ValueError)
    │   ├── InvalidEventKey          an event key that breaks the rules (also ValueError)
    │   ├── InvalidBatch             a batch operation, filter or parameter that breaks the rules (also ValueError)
    │   └── InvalidExport*           a run export that cannot be read or replayed
    ├── UnknownWorkflow
    ├── UnknownStep
    ├── SerializationError           value is not JSON data
    │   ├── PayloadTooLarge
    │   ├── InvalidTags*
    │   └── InvalidExport*
    ├── NotFound                     (also LookupError)
    │   ├── RunNotFound
    │   ├── ScheduleNotFound
    │   ├── BatchNotFound
    │   └── HookNotFound*
    ├── Duplicate                    a conditional write lost (already recorded)
    │   └── ScheduleAlreadyExists
    ├── ItemTooLarge                 a DynamoDB item over 400 KB
    ├── StorageError                 DynamoDB / SQS / S3 failure, cause attached
    │   ├── Throttled
    │   └── PayloadUnavailable       a referenced large payload is missing or does not match its hash
    ├── DeploymentError              a CloudFormation stack could not be created or updated
    ├── HookError
    │   ├── HookNotFound*
    │   ├── HookExpired
    │   ├── HookClosed
    │   ├── HookAlreadyResumed
    │   └── HookPayloadInvalid
    ├── StepFailed                   a step failed after its retries (raised in the workflow)
    ├── StepError
    │   ├── FatalError               fail the step now, no retry
    │   ├── RetryableError           retry, optionally after ``retry_after``
    │   └── StepTimeout              (also TimeoutError)
    ├── NonDeterminismError          names the code versions that recorded and replayed the history
    ├── ForkRefused                  a fork or rerun at a position whose history cannot be copied
    ├── NonDurableAwait              an async workflow awaited something that is not a durable call
    ├── NotAwaited                   an async workflow ended with a durable call never awaited
    ├── SuspensionSwallowed          workflow code caught a durable call's suspension
    ├── WaitTimeout                  (also TimeoutError)
    ├── StreamFull                   a run's progress stream holds its maximum of entries or bytes
    ├── EventTimeout                 get_event waited its timeout (also TimeoutError)
    ├── EventNotSet                  the run ended without setting the event key (also LookupError)
    ├── UpdateError                  an update (``update_run``) got no answer from its handler
    │   ├── UpdateRefused            no handler of that name, or its validator refused the request
    │   ├── UpdateFailed             the handler raised: its message
    │   ├── UpdateTimeout            no answer within the timeout (also TimeoutError); it may still be applied
    │   └── UpdateRunEnded*          the run (its chain) ended before it answered
    ├── DurableCallInUpdate          an update handler or validator made a durable call
    ├── ParallelError                a branch failed
    │   └── FanOutFailed             a fan-out's completion criteria cannot be met (too many branches failed)
    ├── RunFailed
    ├── RunCancelled
    ├── RunTimedOut
    ├── RunEnded                     a signal or cancel sent to an ended run
    │   └── UpdateRunEnded*
    ├── ChildFailed
    ├── ChildDetached                result() of a detached child (its end is no business of its parent)
    └── Stalled                      the testing kit cannot make a run go on

``*``: an error with two parents, drawn under each (``tests/unit/test_error_tree.py`` checks
that this tree is the module's classes and their bases).

The engine's control flow (a run suspends, continues as new, or a replay stops) is not an
error: it lives in ``workflows/core/model/control.py``, derives from ``BaseException`` so user code
does not swallow it, and is never raised to callers. ``Suspend``, ``ContinueAsNew``,
``ReplayAborted`` and ``ReplayStopped`` are still importable from here, with a
``DeprecationWarning``, for one release.
"""

from __future__ import annotations

import warnings
from typing import Any


class WorkflowError(Exception):
    """Base class of every error raised by the library."""


class InvalidInput(WorkflowError):
    """A value given to the library (an argument, an option, a name, a file) breaks its rules;
    the message names the value and the rule."""


class ConfigurationError(WorkflowError):
    """The settings or environment are invalid."""


class NotInWorkflow(WorkflowError):
    """A call that only makes sense inside a running workflow was made outside one."""


class RegistrationError(WorkflowError):
    """A decorator was misused: duplicate name or unknown option."""


class InvalidName(InvalidInput, RegistrationError, ConfigurationError):
    """A workflow, step, queue or signal name that breaks the naming rules (see ``workflows.core.model.names``)."""


class UnknownWorkflow(WorkflowError):
    """No workflow is registered under this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown workflow {name!r} (is its module in WORKFLOWS_IMPORTS?)")
        self.name = name


class UnknownStep(WorkflowError):
    """No step is registered under this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown step {name!r}")
        self.name = name


class InvalidArguments(InvalidInput, TypeError):
    """Arguments that do not fit the signature of the workflow (or step) they are for, or keywords
    that are no option of the library function they are given to."""


class SerializationError(WorkflowError):
    """A value cannot be stored as JSON data."""


class PayloadTooLarge(SerializationError):
    """An encoded payload is over the configured size limit."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} is {size} bytes, over the limit of {limit} bytes")
        self.what, self.size, self.limit = what, size, limit


class InvalidTags(InvalidInput, SerializationError, ValueError):
    """Run tags that are not string keys and values within the limits (see ``workflows.core.storage.tags``)."""


class InvalidDuration(InvalidInput, ValueError):
    """A duration string or value cannot be understood."""


class InvalidDebounce(InvalidInput, ValueError):
    """Bad debounce options of a start: a window that is not a positive duration, a missing or
    bad ``debounce_key``, a ``debounce_max`` shorter than the window, or a combination refused."""


class InvalidSchedule(InvalidInput, ValueError):
    """A schedule has a bad cron expression, time zone, interval or option."""


class InvalidStartTime(InvalidInput, ValueError):
    """A bad delayed start: a ``delay`` that is not a duration, a ``start_at`` that is not an aware
    datetime, or both given."""


class InvalidChildOptions(InvalidInput, ValueError):
    """A bad child start: a ``parent_close_policy`` that is not ``cancel``, ``request_cancel`` or
    ``abandon``, a detached child with another policy, or these options outside a workflow."""


class InvalidPriority(InvalidInput, RegistrationError, ValueError):
    """A priority that is not one of the levels ``high``, ``normal``, ``low``
    (see ``workflows.core.model.priority``)."""


class NotFound(WorkflowError, LookupError):
    """A stored item does not exist."""


class RunNotFound(NotFound):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run with id {run_id!r}")
        self.run_id = run_id


class ScheduleNotFound(NotFound):
    """No schedule has this id."""

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"no schedule with id {schedule_id!r}")
        self.schedule_id = schedule_id


class BatchNotFound(NotFound):
    """No batch has this id (or it expired, the retention after its end)."""

    def __init__(self, batch_id: str) -> None:
        super().__init__(f"no batch with id {batch_id!r}")
        self.batch_id = batch_id


class InvalidBatch(InvalidInput, ValueError):
    """A batch operation, filter or parameter that breaks the rules (the message names which)."""


class Duplicate(WorkflowError):
    """A conditional write found the outcome already recorded."""


class ScheduleAlreadyExists(Duplicate):
    """A schedule with this id exists already."""

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"a schedule with id {schedule_id!r} already exists")
        self.schedule_id = schedule_id


class ItemTooLarge(WorkflowError):
    """A DynamoDB item would exceed the 400 KB item limit."""

    def __init__(self, field: str, size: int, limit: int) -> None:
        super().__init__(f"item field {field!r} makes the item {size} bytes, over {limit}")
        self.field, self.size, self.limit = field, size, limit


class StorageError(WorkflowError):
    """DynamoDB or SQS failed; the cause is attached as ``__cause__``."""


class Throttled(StorageError):
    """AWS kept throttling the request after the retries ran out."""


class PayloadUnavailable(StorageError):
    """A payload kept in the payload bucket is missing (expired, deleted) or its bytes do not
    match the SHA-256 its reference holds; the message names the object."""


class DeploymentError(WorkflowError):
    """A CloudFormation stack could not be created or updated, or an index of an existing table not
    made (``init-aws``); the message names the failed resources."""


class HookError(WorkflowError):
    """A hook cannot be completed (its payload delivered: ``resume_hook``)."""


class HookNotFound(HookError, NotFound):
    """No hook has this token."""

    def __init__(self, message: str = "no hook matches this token") -> None:
        super().__init__(message)


class HookExpired(HookError):
    """The hook's timeout has passed."""


class HookClosed(HookError):
    """The hook's run has ended."""


class HookAlreadyResumed(HookError):
    """The hook token was already used."""


class HookPayloadInvalid(HookError):
    """The payload does not match the hook's schema; the hook stays pending."""


class StepFailed(WorkflowError):
    """A step failed for good; raised at its call site inside the workflow.

    Attributes:
        name: the step's name.
        error: the recorded error text (``Type: message``).
        failure: the structured failure (``workflows.core.model.failures.Failure``: type, module-qualified
            name, message, traceback and cause chain), None for records written before it was kept.
        type: the failed exception's class name (None if unknown).
    """

    def __init__(self, name: str, error: str | None, *, failure: Any = None) -> None:
        super().__init__(f"step {name!r} failed: {error}")
        self.name, self.error, self.failure = name, error, failure
        self.type: str | None = failure.type if failure is not None else None


class StepError(WorkflowError):
    """Base of the errors a step raises to steer its retries."""


class FatalError(StepError):
    """Fail the step at once, without retries."""

    non_retryable = True


class RetryableError(StepError):
    """Retry the step; ``retry_after`` (seconds) overrides the backoff delay."""

    def __init__(self, message: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StepTimeout(StepError, TimeoutError):
    """A step attempt ran longer than its ``timeout``."""


class NonDeterminismError(WorkflowError):
    """Replay met a different operation than the history recorded.

    ``recorded_by``: the code version that started the run (and recorded its history);
    ``replayed_by``: the version that replayed it (see docs/versioning.md).
    """

    def __init__(self, position: int, recorded: str, found: str, *, recorded_by: str | None = None,
                 replayed_by: str | None = None) -> None:
        versions = ""
        if recorded_by is not None or replayed_by is not None:
            versions = (f" (history recorded by code version {recorded_by or 'unknown'}, "
                        f"replayed by {replayed_by or 'unknown'})")
        super().__init__(
            f"non-deterministic workflow at position {position}: "
            f"history has {recorded!r}, code called {found!r}{versions}"
        )
        self.position, self.recorded, self.found = position, recorded, found
        self.recorded_by, self.replayed_by = recorded_by, replayed_by


class ForkRefused(WorkflowError):
    """A run cannot be forked (or rerun) at the position asked for; the message says why."""

    def __init__(self, run_id: str, position: int | None, reason: str) -> None:
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"cannot fork run {run_id}{where}: {reason}")
        self.run_id, self.position, self.reason = run_id, position, reason


class NonDurableAwait(WorkflowError):
    """An async workflow awaited something other than a durable call (I/O, ``asyncio.sleep``, a task).

    Workflow code is replayed: it may await only steps, ``sleep``, hooks, signals, children,
    ``parallel`` and ``asyncio.gather`` of step calls. Do I/O in a step.
    """

    def __init__(self, awaited: str) -> None:
        super().__init__(
            f"an async workflow awaited {awaited}, which is not a durable call: workflow code may await only "
            "steps, sleep(), hook waits, wait_for_signal(), child results, parallel() and asyncio.gather() of "
            "step calls; do I/O and asyncio work in a step"
        )
        self.awaited = awaited


class NotAwaited(WorkflowError):
    """An async workflow returned while a durable call it made was never awaited (a missing ``await``)."""

    def __init__(self, calls: list[str]) -> None:
        super().__init__(f"an async workflow returned without awaiting {', '.join(calls)}: a durable call in an "
                         "async workflow runs only when awaited (missing 'await'?)")
        self.calls = calls


class SuspensionSwallowed(WorkflowError):
    """Workflow code caught the ``Suspend`` of a durable call and went on (or raised something else)."""

    def __init__(self, position: int, op: str) -> None:
        super().__init__(
            f"workflow code swallowed a suspension at op {position} ({op}): durable calls stop the "
            f"workflow function by raising Suspend, a BaseException; the likely cause is "
            f"`except BaseException:` or a bare except around the call (catch Exception instead)"
        )
        self.position, self.op = position, op


class WaitTimeout(WorkflowError, TimeoutError):
    """A hook or signal wait passed its timeout."""


class InvalidEventKey(InvalidInput, ValueError):
    """An event key (``set_event``, ``get_event``) that breaks the rules of ``workflows.core.ops.events``."""


class StreamFull(WorkflowError):
    """A run's progress stream holds its maximum of entries or bytes; nothing more is appended."""


class EventTimeout(WorkflowError, TimeoutError):
    """``get_event`` waited its whole timeout and the run had not set the key."""


class EventNotSet(WorkflowError, LookupError):
    """The run ended (or continued as a new run) without setting the event key ``get_event`` waits for."""


class UpdateError(WorkflowError):
    """An update sent with ``update_run`` got no answer from its handler (see docs/updates.md)."""


class UpdateRefused(UpdateError):
    """The run has no handler of the update's name, or the handler's validator refused the
    request: nothing was recorded in the run's history (the message says why)."""


class UpdateFailed(UpdateError):
    """The update's handler raised; the message is its error (the run goes on)."""


class UpdateTimeout(UpdateError, TimeoutError):
    """No answer within the timeout; the request stays stored and the run may still apply it."""


class DurableCallInUpdate(WorkflowError):
    """An update handler or validator made a durable call (a step, a wait, an op): handlers
    run between two durable calls of the workflow and may only read and change its state."""


class ParallelError(WorkflowError):
    """A branch of ``parallel`` failed after its retries."""

    def __init__(self, index: int, name: str, error: str) -> None:
        super().__init__(f"branch {index} ({name}) failed: {error}")
        self.index, self.name, self.error = index, name, error


class FanOutFailed(ParallelError):
    """More branches of a fan-out with completion criteria failed than it tolerates.

    Attributes:
        failures: the error text of each failed branch that counted, by branch index.
        succeeded: the indexes of the branches that had succeeded when the fan-out failed.
    """

    def __init__(self, message: str, failures: dict[int, str], succeeded: list[int]) -> None:
        WorkflowError.__init__(self, message)
        first = min(failures) if failures else -1
        self.index, self.name, self.error = first, "", failures.get(first, message)
        self.failures, self.succeeded = failures, succeeded


class RunFailed(WorkflowError):
    """The run ended as failed.

    Attributes:
        run_id: the run.
        error: the recorded error text (``Type: message``).
        failure: the structured failure (type, module-qualified name, message, traceback and cause
            chain, as a failed step's), None for runs that ended before it was kept or without an
            exception (recovery given up).
        cause: the exception the workflow raised, rebuilt, when its type is declared
            (``@declare_error``) in this process; None otherwise (``failure`` still names it).
            Also this exception's ``__cause__``.
    """

    def __init__(self, run_id: str, error: str | None, *, failure: Any = None,
                 cause: BaseException | None = None) -> None:
        super().__init__(f"run {run_id} failed: {error}")
        self.run_id, self.error, self.failure, self.cause = run_id, error, failure, cause
        self.__cause__ = cause


class RunEnded(WorkflowError):
    """The run has ended; it takes no more signals."""


class UpdateRunEnded(UpdateError, RunEnded):
    """The run (the last run of its continue-as-new chain) ended before it answered the update."""


class RunCancelled(WorkflowError):
    """The run was cancelled."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} was cancelled")
        self.run_id = run_id


class RunTimedOut(WorkflowError):
    """The run passed its ``max_duration``."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} timed out")
        self.run_id = run_id


class ChildFailed(WorkflowError):
    """A child workflow did not complete.

    Attributes:
        run_id: the child run.
        status: how it ended (``failed``, ``cancelled``, ``timed_out``).
        error: its recorded error text.
        failure: the structured failure of a child that failed raising (see :class:`RunFailed`).
        cause: the exception the child raised, rebuilt, when its type is declared in this process
            (also this exception's ``__cause__``); None otherwise.
    """

    def __init__(self, run_id: str, status: str, error: str | None, *, failure: Any = None,
                 cause: BaseException | None = None) -> None:
        super().__init__(f"child run {run_id} ended {status}: {error}")
        self.run_id, self.status, self.error, self.failure, self.cause = run_id, status, error, failure, cause
        self.__cause__ = cause


class ChildDetached(WorkflowError):
    """``result()`` of a child started detached: its parent never waits for it (its end writes
    nothing into the parent; read it with ``get_run(run_id)`` from outside a workflow)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"child run {run_id} was started detached: its parent cannot wait for its result")
        self.run_id = run_id


class InvalidExport(InvalidInput, SerializationError):
    """A run export (``workflows runs export``) that cannot be read or replayed."""


class Stalled(WorkflowError):
    """The testing kit cannot make a run go on: it waits for something only the test can do
    (complete a hook, send a signal) and no timer is due, or it did not settle."""


MAX_ERROR_CHARS = 4000  # an error is stored in a history record or a run item: keep it well under 400 KB


def describe(exc: BaseException) -> str:
    """Return ``Type: message`` for storing an error, cut to ``MAX_ERROR_CHARS`` (an
    exception with a huge message must fail its step, not the writes that record it)."""
    text = f"{type(exc).__name__}: {exc}"
    if len(text) <= MAX_ERROR_CHARS:
        return text
    cut = text[:MAX_ERROR_CHARS]
    return f"{cut} ... ({len(text) - len(cut)} more characters)"


#: Control flow that lived here, importable for one release (``workflows.core.model.control``).
_MOVED_CONTROL = ("Suspend", "ContinueAsNew", "ReplayAborted", "ReplayStopped")


def __getattr__(name: str) -> Any:
    if name not in _MOVED_CONTROL:
        raise AttributeError(f"module 'workflows.errors' has no attribute {name!r}")
    from .core.model import control

    warnings.warn(f"workflows.errors.{name} is the engine's control flow, not an error: it moved to "
                  f"workflows.core.model.control (workflows.errors.{name} goes in the next release)",
                  DeprecationWarning, stacklevel=2)
    return getattr(control, name)
