"""Durable workflows on Celery + SQS with DynamoDB persistence.

Mark functions with :func:`workflow` and :func:`step`; start runs with
``my_workflow.start(...)`` or :func:`start`. See docs/ for the guide.

Public names resolve lazily (PEP 562), so ``import workflows`` stays cheap and
importing a submodule such as ``workflows.errors`` loads nothing else.

Modules that moved keep their old import path (:data:`MOVED`), served by a finder that
aliases the old name to the new module: ``workflows.app`` and ``workflows.http`` are
operational paths (``celery -A workflows.app``, ``uvicorn workflows.http:app``) and stay
quietly; the others warn with a ``DeprecationWarning`` and go in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any, Sequence

#: Paths kept for good: what users type to run a worker or serve the hook endpoint.
STABLE: dict[str, str] = {"workflows.app": "workflows.celery.app", "workflows.http": "workflows.web.hooks"}
#: Old module path -> new one, for one release (a ``DeprecationWarning`` on import).
MOVED: dict[str, str] = {
    **{f"workflows.{old}": f"workflows.celery.{new}" for old, new in [
        ("celery_config", "config"), ("celery_install", "install"), ("celery_transport", "transport"),
        ("producer", "producer"), ("visibility", "visibility"), ("deadletter", "deadletter"),
        ("sqs_transport", "sqs"), ("tasks", "tasks"), ("task_steps", "task_steps"), ("celeryconfig", "celeryconfig")]},
    **{f"workflows.cli_{group}": f"workflows.cli.{group}" for group in ("aws", "deferred", "flow", "forks",
                                                                        "payloads", "schedules")},
    **{f"workflows.{old}": f"workflows.local.{new}" for old, new in [
        ("localstack", "server"), ("local_iam", "iam"), ("embedded", "embedded"), ("demo", "demo")]},
    **{f"workflows.{old}": f"workflows.core.{new}" for old, new in [
        ("names", "model.names"), ("limits", "model.limits"), ("pricing", "model.pricing"),
        ("inspect", "storage.timeline"), ("registry", "model.registry")]},
    # the core's modules, before it was split into rooms (docs/architecture.md, "The core's rooms")
    **{f"workflows.core.{module}": f"workflows.core.{room}.{module}" for room, modules in [
        ("model", "records control failures names embed registry limits join_layout batches priority tokens hooks "
                  "lease buckets pricing"),
        ("storage", "ports plans listing payloads metering newest retention tags chains timeline recovery "
                    "writes"),
        ("admission", "gates delayed debounce workflow_slots deferral versions"),
        ("replay", "context commands commit deterministic history_cache marks observer guard updates in_place "
                   "children"),
        ("execution", "attempts flow overrun step_loop heartbeat"),
        ("ops", "waits first events fanout completion steps patching replay_log inbox async_workflow"),
        ("background", "firing sweeper orphans forks update_requests")] for module in modules.split()},
    # (``workflows.core.storage`` and ``workflows.core.ops`` are rooms now: their modules are
    # ``workflows.core.storage.rules`` and ``workflows.core.ops.calls``)
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import an old module path as the module that now lives at the new one (the same object)."""

    def __init__(self) -> None:
        self._own_specs: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED or fullname in STABLE:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED.get(spec.name)
        if new is not None:
            warnings.warn(f"{spec.name} moved to {new}; import it from there ({spec.name} goes in the next release)",
                          DeprecationWarning, stacklevel=_caller_level())
        module = importlib.import_module(new or STABLE[spec.name])
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old name's spec on the module: give it back its own.
        module.__spec__ = self._own_specs.pop(module.__spec__.name, module.__spec__)  # type: ignore[union-attr]


def _caller_level() -> int:
    """The ``stacklevel`` of the importing line: past this module's frames and ``import_module``'s
    (``warnings`` itself skips the import machinery's frozen frames)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename in (__file__, importlib.__file__)
                                 or frame.f_code.co_filename.startswith("<frozen importlib")):
        if not frame.f_code.co_filename.startswith("<frozen"):
            level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["RetryPolicy", "RunFilter", "SchedulePolicy", "StartOptions", "TimeRange", "Timetable"],
                    "workflows.options"),
    **dict.fromkeys(["BatchRecord", "batch_cancel", "batch_rerun", "batch_signal", "batch_tag", "drive_batch",
                     "get_batch", "list_batches", "start_batch", "stop_batch"], "workflows.batches"),
    **dict.fromkeys(["BatchNotFound", "InvalidBatch"], "workflows.errors"),
    **dict.fromkeys(["RunHandle", "apply_async", "cancel", "count_runs", "get_run", "list_run_summaries", "list_runs",
                     "resume_hook", "send_signal", "start"], "workflows.client"),
    "RunStatus": "workflows.core.model.records",
    **dict.fromkeys(["StreamPage", "get_event", "read_stream"], "workflows.events"),
    "update_run": "workflows.client",
    "on_update": "workflows.core.replay.updates",
    **dict.fromkeys(["DurableCallInUpdate", "UpdateError", "UpdateFailed", "UpdateRefused", "UpdateRunEnded",
                     "UpdateTimeout"], "workflows.errors"),
    **dict.fromkeys(["deprecate_patch", "patched"], "workflows.core.ops.patching"),
    **dict.fromkeys(["now", "random", "uuid4"], "workflows.core.replay.deterministic"),
    "logger": "workflows.core.ops.replay_log",
    "FanOutResult": "workflows.core.ops.completion",
    **dict.fromkeys(["Failure", "declare_error"], "workflows.core.model.failures"),
    **dict.fromkeys(["First", "signal", "timer"], "workflows.core.ops.first"),
    **dict.fromkeys(["fork_run", "rerun"], "workflows.forking"),
    "install": "workflows.celery.install",
    **dict.fromkeys(["Step", "StepCall", "Workflow", "step", "workflow"], "workflows.decorators"),
    **dict.fromkeys(["EventNotSet", "EventTimeout", "InvalidEventKey", "StreamFull"], "workflows.errors"),
    **dict.fromkeys(["ChildDetached", "ChildFailed", "InvalidChildOptions", "InvalidStartTime"], "workflows.errors"),
    **dict.fromkeys(["FanOutFailed", "FatalError", "ForkRefused", "HookAlreadyResumed", "HookClosed", "HookExpired",
                     "HookNotFound", "InvalidInput", "InvalidSchedule", "InvalidTags", "NonDeterminismError",
                     "PayloadTooLarge",
                     "RetryableError", "RunCancelled", "RunFailed", "RunTimedOut", "ScheduleAlreadyExists",
                     "ScheduleNotFound", "StepFailed", "UnknownWorkflow", "WaitTimeout", "WorkflowError"],
                    "workflows.errors"),
    # the groups of the error tree (workflows/errors.py), what a caller catches
    **dict.fromkeys(["ConfigurationError", "Conflict", "HookError", "LimitReached", "NotCompleted", "NotFound",
                     "SerializationError", "StorageError", "StepError", "Timeout", "WorkflowCodeError"],
                    "workflows.errors"),
    **dict.fromkeys(["cancel_requested", "continue_as_new", "first_of", "hook", "parallel", "set_event", "set_tags",
                     "sleep", "wait_for_signal", "write_stream"], "workflows.core.ops.calls"),
    **dict.fromkeys(["ScheduleInfo", "backfill_schedule", "create_schedule", "delete_schedule", "get_schedule",
                     "list_schedules", "pause_schedule", "resume_schedule", "trigger_schedule", "update_schedule"],
                    "workflows.schedules"),
}

__all__ = [
    "ConfigurationError", "Conflict", "HookError", "LimitReached", "NotCompleted", "NotFound", "SerializationError",
    "StorageError", "StepError", "Timeout", "WorkflowCodeError",
    "DurableCallInUpdate", "UpdateError", "UpdateFailed", "UpdateRefused", "UpdateRunEnded", "UpdateTimeout",
    "on_update", "update_run",
    "ChildDetached", "ChildFailed", "InvalidChildOptions", "InvalidStartTime",
    "BatchNotFound", "BatchRecord", "InvalidBatch", "RunFilter", "batch_cancel", "batch_rerun", "batch_signal",
    "batch_tag", "drive_batch", "get_batch", "list_batches", "start_batch", "stop_batch",
    "EventNotSet", "EventTimeout", "InvalidEventKey", "StreamFull", "StreamPage", "get_event", "read_stream",
    "set_event", "write_stream", "Failure", "declare_error", "First", "first_of", "signal", "timer", "FanOutFailed",
    "FanOutResult", "FatalError",
    "ForkRefused", "HookAlreadyResumed",
    "HookClosed", "HookExpired", "HookNotFound", "InvalidInput", "InvalidSchedule", "InvalidTags",
    "NonDeterminismError", "PayloadTooLarge", "RetryPolicy", "RetryableError", "RunCancelled", "RunFailed",
    "RunHandle", "RunStatus", "RunTimedOut", "ScheduleAlreadyExists", "ScheduleInfo", "ScheduleNotFound",
    "SchedulePolicy", "StartOptions", "Step", "StepCall", "StepFailed", "TimeRange", "Timetable", "UnknownWorkflow",
    "WaitTimeout", "Workflow", "WorkflowError", "apply_async", "backfill_schedule", "cancel", "cancel_requested",
    "continue_as_new", "count_runs", "create_schedule", "delete_schedule", "deprecate_patch", "fork_run", "get_run",
    "get_schedule", "hook", "install", "list_run_summaries", "list_runs", "list_schedules", "logger", "now",
    "parallel", "patched", "pause_schedule", "random", "rerun", "resume_hook", "resume_schedule", "send_signal",
    "set_tags", "sleep", "start", "step", "trigger_schedule", "update_schedule", "uuid4", "wait_for_signal",
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
    from .batches import (
        BatchRecord,
        batch_cancel,
        batch_rerun,
        batch_signal,
        batch_tag,
        drive_batch,
        get_batch,
        list_batches,
        start_batch,
        stop_batch,
    )
    from .celery.install import install
    from .client import (
        RunHandle,
        apply_async,
        cancel,
        count_runs,
        get_run,
        list_run_summaries,
        list_runs,
        resume_hook,
        send_signal,
        start,
        update_run,
    )
    from .core.model.failures import Failure, declare_error
    from .core.model.records import RunStatus
    from .core.ops.calls import (
        cancel_requested,
        continue_as_new,
        first_of,
        hook,
        parallel,
        set_event,
        set_tags,
        sleep,
        wait_for_signal,
        write_stream,
    )
    from .core.ops.completion import FanOutResult
    from .core.ops.first import First, signal, timer
    from .core.ops.patching import deprecate_patch, patched
    from .core.ops.replay_log import logger
    from .core.replay.deterministic import now, random, uuid4
    from .core.replay.updates import on_update
    from .decorators import Step, StepCall, Workflow, step, workflow
    from .errors import (
        BatchNotFound,
        ChildDetached,
        ChildFailed,
        ConfigurationError,
        Conflict,
        DurableCallInUpdate,
        EventNotSet,
        EventTimeout,
        FanOutFailed,
        FatalError,
        ForkRefused,
        HookAlreadyResumed,
        HookClosed,
        HookError,
        HookExpired,
        HookNotFound,
        InvalidBatch,
        InvalidChildOptions,
        InvalidEventKey,
        InvalidInput,
        InvalidSchedule,
        InvalidStartTime,
        InvalidTags,
        LimitReached,
        NonDeterminismError,
        NotCompleted,
        NotFound,
        PayloadTooLarge,
        RetryableError,
        RunCancelled,
        RunFailed,
        RunTimedOut,
        ScheduleAlreadyExists,
        ScheduleNotFound,
        SerializationError,
        StepError,
        StepFailed,
        StorageError,
        StreamFull,
        Timeout,
        UnknownWorkflow,
        UpdateError,
        UpdateFailed,
        UpdateRefused,
        UpdateRunEnded,
        UpdateTimeout,
        WaitTimeout,
        WorkflowCodeError,
        WorkflowError,
    )
    from .events import StreamPage, get_event, read_stream
    from .forking import fork_run, rerun
    from .options import RetryPolicy, RunFilter, SchedulePolicy, StartOptions, TimeRange, Timetable
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
