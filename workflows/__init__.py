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
    InvalidSchedule,
    NonDeterminismError,
    PayloadTooLarge,
    RetryableError,
    RunCancelled,
    RunFailed,
    RunTimedOut,
    ScheduleAlreadyExists,
    ScheduleNotFound,
    StepFailed,
    UnknownWorkflow,
    WaitTimeout,
    WorkflowError,
)
from .ops import cancel_requested, continue_as_new, hook, parallel, sleep, wait_for_signal
from .schedules import (
    ScheduleInfo,
    backfill_schedule,
    create_schedule,
    delete_schedule,
    get_schedule,
    list_schedules,
    pause_schedule,
    resume_schedule,
    trigger_schedule,
    update_schedule,
)

__all__ = [
    "FatalError", "HookAlreadyResumed", "HookClosed", "HookExpired", "HookNotFound", "NonDeterminismError",
    "PayloadTooLarge", "RetryableError", "RunCancelled", "RunFailed", "RunHandle", "RunStatus", "RunTimedOut",
    "Step", "StepCall", "StepFailed", "WaitTimeout", "Workflow", "WorkflowError", "cancel", "cancel_requested",
    "continue_as_new", "get_run", "hook", "list_runs", "parallel", "resume_hook", "send_signal", "sleep", "start",
    "step", "wait_for_signal", "workflow",
    "InvalidSchedule", "ScheduleAlreadyExists", "ScheduleInfo", "ScheduleNotFound", "UnknownWorkflow",
    "backfill_schedule", "create_schedule", "delete_schedule", "get_schedule", "list_schedules", "pause_schedule",
    "resume_schedule", "trigger_schedule", "update_schedule",
]
