"""Durable workflows on Celery + SQS with DynamoDB persistence.

Mark functions with :func:`workflow` and :func:`step`; start runs with
``my_workflow.start(...)`` or :func:`start`. See docs/ for the guide.
"""

from .client import (
    RunHandle,
    RunStatus,
    cancel,
    get_run,
    list_runs,
    resume_hook,
    send_signal,
    start,
)
from .decorators import Step, StepCall, Workflow, step, workflow
from .errors import (
    FatalError,
    HookAlreadyResumed,
    HookClosed,
    HookExpired,
    HookNotFound,
    NonDeterminismError,
    PayloadTooLarge,
    RetryableError,
    RunCancelled,
    RunFailed,
    RunTimedOut,
    StepFailed,
    WaitTimeout,
    WorkflowError,
)
from .ops import cancel_requested, continue_as_new, hook, parallel, sleep, wait_for_signal

__all__ = [
    "FatalError", "HookAlreadyResumed", "HookClosed", "HookExpired", "HookNotFound", "NonDeterminismError",
    "PayloadTooLarge", "RetryableError", "RunCancelled", "RunFailed", "RunHandle", "RunStatus", "RunTimedOut",
    "Step", "StepCall", "StepFailed", "WaitTimeout", "Workflow", "WorkflowError", "cancel", "cancel_requested",
    "continue_as_new", "get_run", "hook", "list_runs", "parallel", "resume_hook", "send_signal", "sleep", "start",
    "step", "wait_for_signal", "workflow",
]
