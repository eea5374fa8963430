"""Durable workflows on Celery + SQS with DynamoDB persistence.

Mark functions with :func:`workflow` and :func:`step`; start runs with
``my_workflow.start(...)`` or :func:`start`. See docs/ for the guide.

Public names resolve lazily (PEP 562), so ``import workflows`` stays cheap and
importing a submodule such as ``workflows.errors`` loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["RunHandle", "cancel", "count_runs", "get_run", "list_run_summaries", "list_runs",
                     "resume_hook", "send_signal", "start"], "workflows.client"),
    "RunStatus": "workflows.core.records",
    **dict.fromkeys(["deprecate_patch", "patched"], "workflows.core.patching"),
    **dict.fromkeys(["fork_run", "rerun"], "workflows.forking"),
    "install": "workflows.celery_install",
    **dict.fromkeys(["Step", "StepCall", "Workflow", "step", "workflow"], "workflows.decorators"),
    **dict.fromkeys(["FatalError", "ForkRefused", "HookAlreadyResumed", "HookClosed", "HookExpired",
                     "HookNotFound", "InvalidSchedule", "InvalidTags", "NonDeterminismError", "PayloadTooLarge",
                     "RetryableError", "RunCancelled", "RunFailed", "RunTimedOut", "ScheduleAlreadyExists",
                     "ScheduleNotFound", "StepFailed", "UnknownWorkflow", "WaitTimeout", "WorkflowError"],
                    "workflows.errors"),
    **dict.fromkeys(["cancel_requested", "continue_as_new", "hook", "parallel", "set_tags", "sleep", "wait_for_signal"],
                    "workflows.core.ops"),
    **dict.fromkeys(["ScheduleInfo", "backfill_schedule", "create_schedule", "delete_schedule", "get_schedule",
                     "list_schedules", "pause_schedule", "resume_schedule", "trigger_schedule", "update_schedule"],
                    "workflows.schedules"),
}

__all__ = [
    "FatalError", "ForkRefused", "HookAlreadyResumed", "HookClosed", "HookExpired", "HookNotFound", "InvalidSchedule",
    "InvalidTags", "NonDeterminismError", "PayloadTooLarge", "RetryableError", "RunCancelled", "RunFailed",
    "RunHandle", "RunStatus", "RunTimedOut", "ScheduleAlreadyExists", "ScheduleInfo", "ScheduleNotFound", "Step",
    "StepCall", "StepFailed", "UnknownWorkflow", "WaitTimeout", "Workflow", "WorkflowError", "backfill_schedule",
    "cancel", "cancel_requested", "continue_as_new", "count_runs", "create_schedule", "delete_schedule",
    "deprecate_patch", "fork_run", "get_run", "get_schedule", "hook", "install", "list_run_summaries", "list_runs",
    "list_schedules", "parallel", "patched", "pause_schedule", "rerun", "resume_hook", "resume_schedule",
    "send_signal", "set_tags", "sleep", "start", "step", "trigger_schedule", "update_schedule", "wait_for_signal",
    "workflow",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workflows' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .celery_install import install
    from .client import (
        RunHandle,
        cancel,
        count_runs,
        get_run,
        list_run_summaries,
        list_runs,
        resume_hook,
        send_signal,
        start,
    )
    from .core.ops import cancel_requested, continue_as_new, hook, parallel, set_tags, sleep, wait_for_signal
    from .core.patching import deprecate_patch, patched
    from .core.records import RunStatus
    from .decorators import Step, StepCall, Workflow, step, workflow
    from .errors import (
        FatalError,
        ForkRefused,
        HookAlreadyResumed,
        HookClosed,
        HookExpired,
        HookNotFound,
        InvalidSchedule,
        InvalidTags,
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
    from .forking import fork_run, rerun
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
