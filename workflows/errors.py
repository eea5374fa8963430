"""Every error the library raises.

Thirteen groups under ``WorkflowError`` (and the testing kit's ``Stalled``), each by what you do
about it; every error has one parent. Catch a group to handle all its errors, a leaf to handle
one; ``WorkflowError`` catches them all.

Tree::

    WorkflowError
    ├── InvalidInput                 a value given to the library breaks its rules: fix the value (also ValueError)
    │   ├── RegistrationError        a decorator given a bad option, a taken name, a bad hook schema or handler
    │   │   ├── InvalidName          a workflow, step, queue or signal name with characters it cannot hold
    │   │   └── InvalidPriority      a priority that is not high, normal or low
    │   ├── InvalidArguments         arguments that do not fit the function (also TypeError, see the rules below)
    │   ├── InvalidTags              run tags that break the rules
    │   ├── InvalidDuration          a duration that cannot be understood
    │   ├── InvalidDebounce          bad debounce window, key or cap of a start
    │   ├── InvalidSchedule          bad cron, time zone, interval or policy
    │   ├── InvalidStartTime         a bad delay or start time of a start
    │   ├── InvalidChildOptions      a bad parent-close policy, or child options outside a workflow
    │   ├── InvalidBatch             a batch operation, filter or parameter that breaks the rules
    │   ├── InvalidEventKey          an event key that breaks the rules
    │   └── InvalidExport            a run export that cannot be read or replayed
    ├── ConfigurationError           the settings, environment or AWS resources are invalid: fix them, restart
    │   └── DeploymentError          a CloudFormation stack could not be created or updated
    ├── NotFound                     what the call names does not exist (also LookupError)
    │   ├── RunNotFound
    │   ├── ScheduleNotFound
    │   ├── BatchNotFound
    │   ├── HookNotFound             no hook has this token
    │   ├── UnknownWorkflow          no workflow registered under this name (is its module imported?)
    │   ├── UnknownStep              no step registered under this name
    │   └── EventNotSet              the run ended without setting the event key get_event waits for
    ├── Conflict                     the request conflicts with the state of what it names
    │   ├── Duplicate                a conditional write lost: what it would create exists
    │   │   └── ScheduleAlreadyExists
    │   ├── RunEnded                 a signal or cancel sent to an ended run
    │   └── ForkRefused              a fork or rerun at a position whose history cannot be copied
    ├── LimitReached                 a size limit of what is stored was reached: store less
    │   ├── ItemTooLarge             a DynamoDB item over 400 KB
    │   └── StreamFull               a run's progress stream holds its maximum of entries or bytes
    ├── SerializationError           a value is not JSON data
    │   └── PayloadTooLarge          an encoded payload over the configured limit
    ├── StorageError                 DynamoDB / SQS / S3 failed, cause attached: retry later
    │   ├── Throttled
    │   └── PayloadUnavailable       a referenced large payload is missing or does not match its hash
    ├── HookError                    a hook cannot take this payload (resume_hook; HookNotFound is a NotFound)
    │   ├── HookExpired
    │   ├── HookClosed
    │   ├── HookAlreadyResumed
    │   └── HookPayloadInvalid
    ├── StepError                    raise these in a step to steer its retries
    │   ├── FatalError               fail the step now, no retry
    │   └── RetryableError           retry, optionally after ``retry_after``
    ├── Timeout                      a wait passed its timeout; it may still happen (also TimeoutError)
    │   ├── WaitTimeout              a hook or signal wait in a workflow
    │   ├── EventTimeout             get_event
    │   ├── UpdateTimeout            update_run: no answer yet, the update may still be applied
    │   └── StepTimeout              a step attempt ran past its ``timeout`` (it is retried)
    ├── UpdateError                  update_run got an answer that is no result (UpdateTimeout is a Timeout)
    │   ├── UpdateRefused            no handler of that name, or its validator refused the request
    │   ├── UpdateFailed             the handler raised: its message
    │   └── UpdateRunEnded           the run (its chain) ended before it answered
    ├── NotCompleted                 what you waited for failed, was cancelled or timed out
    │   ├── StepFailed               a step failed after its retries (raised in the workflow)
    │   ├── ParallelError            a branch failed
    │   │   └── FanOutFailed         a fan-out's completion criteria cannot be met
    │   ├── RunFailed
    │   ├── RunCancelled
    │   ├── RunTimedOut              the run passed its ``max_duration`` (not a TimeoutError: the run ended)
    │   └── ChildFailed
    ├── WorkflowCodeError            workflow code broke a rule of durable code: fix the code
    │   ├── NonDeterminismError      names the code versions that recorded and replayed the history
    │   ├── NonDurableAwait          an async workflow awaited something that is not a durable call
    │   ├── NotAwaited               an async workflow ended with a durable call never awaited
    │   ├── SuspensionSwallowed      workflow code caught a durable call's suspension
    │   ├── DurableCallInUpdate      an update handler or validator made a durable call
    │   ├── NotInWorkflow            a workflow-only call made outside a workflow
    │   └── ChildDetached            result() of a detached child (its end is no business of its parent)
    └── Stalled                      the testing kit cannot make a run go on

The rules (``tests/architecture/test_error_tree.py``): at most 15 groups under the root; one
parent each; a builtin (``ValueError``, ``LookupError``, ``TimeoutError``) is mixed in by a group,
so each of its errors is one, never by a leaf, but for ``InvalidArguments`` (a ``TypeError``, as
Python's own argument mismatches are). An error that is both of an operation and of a kind
carrying a builtin sits under the kind: ``HookNotFound`` is a ``NotFound``, ``UpdateTimeout`` and
``StepTimeout`` are ``Timeout`` errors. ``tests/unit/test_error_tree.py`` checks that this tree
is the module's classes and their bases.

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


class InvalidInput(WorkflowError, ValueError):
    """A value given to the library (an argument, an option, a name, a file) breaks its rules;
    the message names the value and the rule. Also a ``ValueError``."""


class RegistrationError(InvalidInput):
    """A decorator or a registration was given something it cannot take: an unknown or bad option,
    a name taken by another function, a name or priority that breaks the rules."""


class InvalidName(RegistrationError):
    """A workflow, step, queue or signal name that breaks the naming rules (see ``workflows.core.model.names``)."""


class InvalidPriority(RegistrationError):
    """A priority that is not one of the levels ``high``, ``normal``, ``low``
    (see ``workflows.core.model.priority``)."""


class InvalidArguments(InvalidInput, TypeError):
    """Arguments that do not fit the signature of the workflow (or step) they are for, or keywords
    that are no option of the library function they are given to.

    Also a ``TypeError``, as Python's own argument mismatches are: the one leaf that mixes in a
    builtin of its own (the rest of ``InvalidInput`` is no ``TypeError``)."""


class InvalidTags(InvalidInput):
    """Run tags that are not string keys and values within the limits (see ``workflows.core.storage.tags``)."""


class InvalidDuration(InvalidInput):
    """A duration string or value cannot be understood."""


class InvalidDebounce(InvalidInput):
    """Bad debounce options of a start: a window that is not a positive duration, a missing or
    bad ``debounce_key``, a ``debounce_max`` shorter than the window, or a combination refused."""


class InvalidSchedule(InvalidInput):
    """A schedule has a bad cron expression, time zone, interval or option."""


class InvalidStartTime(InvalidInput):
    """A bad delayed start: a ``delay`` that is not a duration, a ``start_at`` that is not an aware
    datetime, or both given."""


class InvalidChildOptions(InvalidInput):
    """A bad child start: a ``parent_close_policy`` that is not ``cancel``, ``request_cancel`` or
    ``abandon``, a detached child with another policy, or these options outside a workflow."""


class InvalidBatch(InvalidInput):
    """A batch operation, filter or parameter that breaks the rules (the message names which)."""


class InvalidEventKey(InvalidInput):
    """An event key (``set_event``, ``get_event``) that breaks the rules of ``workflows.core.ops.events``."""


class InvalidExport(InvalidInput):
    """A run export (``workflows runs export``) that cannot be read or replayed."""


class ConfigurationError(WorkflowError):
    """The settings, the environment or the AWS resources are invalid: fix them and restart."""


class DeploymentError(ConfigurationError):
    """A CloudFormation stack could not be created or updated, or an index of an existing table not
    made (``init-aws``); the message names the failed resources."""


class NotFound(WorkflowError, LookupError):
    """What the call names does not exist: a run, schedule, batch, hook, a registered workflow or
    step, or the event a run ended without setting. Also a ``LookupError``."""


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


class HookNotFound(NotFound):
    """No hook has this token."""

    def __init__(self, message: str = "no hook matches this token") -> None:
        super().__init__(message)


class UnknownWorkflow(NotFound):
    """No workflow is registered under this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown workflow {name!r} (is its module in WORKFLOWS_IMPORTS?)")
        self.name = name


class UnknownStep(NotFound):
    """No step is registered under this name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown step {name!r}")
        self.name = name


class EventNotSet(NotFound):
    """The run ended (or continued as a new run) without setting the event key ``get_event`` waits for."""


class Conflict(WorkflowError):
    """The request conflicts with the state of what it names: it exists already, it has ended, it
    cannot be forked there. Read the state again; sending the same request again does not help."""


class Duplicate(Conflict):
    """A conditional write found the outcome already recorded: what it would create exists."""


class ScheduleAlreadyExists(Duplicate):
    """A schedule with this id exists already."""

    def __init__(self, schedule_id: str) -> None:
        super().__init__(f"a schedule with id {schedule_id!r} already exists")
        self.schedule_id = schedule_id


class RunEnded(Conflict):
    """The run has ended; it takes no more signals."""


class ForkRefused(Conflict):
    """A run cannot be forked (or rerun) at the position asked for; the message says why."""

    def __init__(self, run_id: str, position: int | None, reason: str) -> None:
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"cannot fork run {run_id}{where}: {reason}")
        self.run_id, self.position, self.reason = run_id, position, reason


class LimitReached(WorkflowError):
    """A size limit of what is stored was reached (a DynamoDB item, a run's progress stream): store
    less, or keep large values in the payload bucket (docs/payloads.md)."""


class ItemTooLarge(LimitReached):
    """A DynamoDB item would exceed the 400 KB item limit."""

    def __init__(self, field: str, size: int, limit: int) -> None:
        super().__init__(f"item field {field!r} makes the item {size} bytes, over {limit}")
        self.field, self.size, self.limit = field, size, limit


class StreamFull(LimitReached):
    """A run's progress stream holds its maximum of entries or bytes; nothing more is appended."""


class SerializationError(WorkflowError):
    """A value cannot be stored as JSON data."""


class PayloadTooLarge(SerializationError):
    """An encoded payload is over the configured size limit."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(f"{what} is {size} bytes, over the limit of {limit} bytes")
        self.what, self.size, self.limit = what, size, limit


class StorageError(WorkflowError):
    """DynamoDB or SQS failed; the cause is attached as ``__cause__``."""


class Throttled(StorageError):
    """AWS kept throttling the request after the retries ran out."""


class PayloadUnavailable(StorageError):
    """A payload kept in the payload bucket is missing (expired, deleted) or its bytes do not
    match the SHA-256 its reference holds; the message names the object."""


class HookError(WorkflowError):
    """A hook cannot be completed (its payload delivered: ``resume_hook``)."""


class HookExpired(HookError):
    """The hook's timeout has passed."""


class HookClosed(HookError):
    """The hook's run has ended."""


class HookAlreadyResumed(HookError):
    """The hook token was already used."""


class HookPayloadInvalid(HookError):
    """The payload does not match the hook's schema; the hook stays pending."""


class StepError(WorkflowError):
    """Raise one of these in a step to steer its retries."""


class FatalError(StepError):
    """Fail the step at once, without retries."""

    non_retryable = True


class RetryableError(StepError):
    """Retry the step; ``retry_after`` (seconds) overrides the backoff delay."""

    def __init__(self, message: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Timeout(WorkflowError, TimeoutError):
    """A call waited its whole timeout (or a step attempt ran past its own); what it waited for may
    still happen: wait again, or give up. Also a ``TimeoutError``.

    A run that passed its ``max_duration`` ended: that is :class:`RunTimedOut`, a :class:`NotCompleted`."""


class WaitTimeout(Timeout):
    """A hook or signal wait passed its timeout."""


class EventTimeout(Timeout):
    """``get_event`` waited its whole timeout and the run had not set the key."""


class UpdateTimeout(Timeout):
    """No answer within the timeout; the request stays stored and the run may still apply it."""


class StepTimeout(Timeout):
    """A step attempt ran longer than its ``timeout``."""


class UpdateError(WorkflowError):
    """An update sent with ``update_run`` got no answer from its handler (see docs/updates.md)."""


class UpdateRefused(UpdateError):
    """The run has no handler of the update's name, or the handler's validator refused the
    request: nothing was recorded in the run's history (the message says why)."""


class UpdateFailed(UpdateError):
    """The update's handler raised; the message is its error (the run goes on)."""


class UpdateRunEnded(UpdateError):
    """The run (the last run of its continue-as-new chain) ended before it answered the update."""


class NotCompleted(WorkflowError):
    """A step, a fan-out, a run or a child you waited for ended without completing: it failed, was
    cancelled or timed out. The error says how (``failure``, ``cause`` where kept)."""


class StepFailed(NotCompleted):
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


class ParallelError(NotCompleted):
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


class RunFailed(NotCompleted):
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


class RunCancelled(NotCompleted):
    """The run was cancelled."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} was cancelled")
        self.run_id = run_id


class RunTimedOut(NotCompleted):
    """The run passed its ``max_duration``."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} timed out")
        self.run_id = run_id


class ChildFailed(NotCompleted):
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


class WorkflowCodeError(WorkflowError):
    """Workflow code broke a rule of durable code (it is replayed: the same calls in the same order,
    only durable calls awaited, durable calls only inside a workflow). Fix the workflow's code:
    retrying the run does not help."""


class NonDeterminismError(WorkflowCodeError):
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


class NonDurableAwait(WorkflowCodeError):
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


class NotAwaited(WorkflowCodeError):
    """An async workflow returned while a durable call it made was never awaited (a missing ``await``)."""

    def __init__(self, calls: list[str]) -> None:
        super().__init__(f"an async workflow returned without awaiting {', '.join(calls)}: a durable call in an "
                         "async workflow runs only when awaited (missing 'await'?)")
        self.calls = calls


class SuspensionSwallowed(WorkflowCodeError):
    """Workflow code caught the ``Suspend`` of a durable call and went on (or raised something else)."""

    def __init__(self, position: int, op: str) -> None:
        super().__init__(
            f"workflow code swallowed a suspension at op {position} ({op}): durable calls stop the "
            f"workflow function by raising Suspend, a BaseException; the likely cause is "
            f"`except BaseException:` or a bare except around the call (catch Exception instead)"
        )
        self.position, self.op = position, op


class DurableCallInUpdate(WorkflowCodeError):
    """An update handler or validator made a durable call (a step, a wait, an op): handlers
    run between two durable calls of the workflow and may only read and change its state."""


class NotInWorkflow(WorkflowCodeError):
    """A call that only makes sense inside a running workflow was made outside one."""


class ChildDetached(WorkflowCodeError):
    """``result()`` of a child started detached: its parent never waits for it (its end writes
    nothing into the parent; read it with ``get_run(run_id)`` from outside a workflow)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"child run {run_id} was started detached: its parent cannot wait for its result")
        self.run_id = run_id


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
