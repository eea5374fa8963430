"""Registries of workflows and steps, by name."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ...errors import InvalidArguments, RegistrationError, UnknownStep, UnknownWorkflow
from .failures import declared_names, restore_declared
from .limits import StepLimits, WorkflowLimits


@dataclass(frozen=True)
class RetryPolicy:
    """How a step retries.

    Attributes:
        retries: attempts after the first (0 = no retry).
        retry_delay: seconds before the first retry.
        backoff: factor applied per retry: the n-th retry waits ``retry_delay * backoff**(n-1)``.
        max_delay: cap of one wait, in seconds.
        jitter: fraction of the wait randomised (0.1 = up to 10% shorter).
    """

    retries: int = 3
    retry_delay: float = 1.0
    backoff: float = 2.0
    max_delay: float = 300.0
    jitter: float = 0.1

    def delay(self, retry_number: int, rand: float) -> float:
        """Return the wait before retry ``retry_number`` (1-based); ``rand`` in [0, 1)."""
        base = min(self.max_delay, self.retry_delay * self.backoff ** (retry_number - 1))
        return base * (1 - self.jitter * rand)


@dataclass(frozen=True)
class StepDef:
    """A registered step.

    ``task`` is the Celery task a step was made from (``step.from_task``): its message
    then goes out under that task's name and routing; ``None`` for a plain ``@step``.
    """

    name: str
    fn: Callable[..., Any]
    retry: RetryPolicy
    timeout: float | None
    queue: str | None
    inline: bool
    task: Any = None
    limits: StepLimits | None = None
    priority: str | None = None  # the level its messages go at (None: its run's; see core.model.priority)


@dataclass(frozen=True)
class WorkflowDef:
    """A registered workflow."""

    name: str
    fn: Callable[..., Any]
    max_duration: float | None
    queue: str | None
    schedule: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    limits: WorkflowLimits | None = None
    priority: str | None = None  # its runs' level unless a start says otherwise (None: normal)


_lock = threading.Lock()
_workflows: dict[str, WorkflowDef] = {}
_steps: dict[str, StepDef] = {}
_step_listeners: list[Callable[[StepDef], None]] = []
_redefine = False  # inside scope(redefine=True): a new function may take a registered name


def _same_function(a: Callable[..., Any], b: Callable[..., Any]) -> bool:
    # A module imported twice (as __main__ and by name) redefines the same function.
    return getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None) and \
        getattr(a.__code__, "co_filename", None) == getattr(b.__code__, "co_filename", None)


def add_workflow(definition: WorkflowDef) -> None:
    """Register a workflow; a different function under a taken name is an error."""
    with _lock:
        known = _workflows.get(definition.name)
        if known is not None and not _redefine and not _same_function(known.fn, definition.fn):
            raise RegistrationError(
                f"workflow name {definition.name!r} is already used by {known.fn.__module__}.{known.fn.__qualname__}")
        _workflows[definition.name] = definition


def add_step(definition: StepDef) -> None:
    """Register a step; a different function under a taken name is an error."""
    with _lock:
        known = _steps.get(definition.name)
        if known is not None and not _redefine and not _same_function(known.fn, definition.fn):
            raise RegistrationError(
                f"step name {definition.name!r} is already used by {known.fn.__module__}.{known.fn.__qualname__}")
        _steps[definition.name] = definition
        listeners = list(_step_listeners)
    for listener in listeners:
        listener(definition)


def get_workflow(name: str) -> WorkflowDef:
    """Return the workflow registered under ``name``.

    Raises:
        UnknownWorkflow: nothing is registered under ``name``.
    """
    try:
        return _workflows[name]
    except KeyError:
        raise UnknownWorkflow(name) from None


def get_step(name: str) -> StepDef:
    """Return the step registered under ``name``.

    Raises:
        UnknownStep: nothing is registered under ``name``.
    """
    try:
        return _steps[name]
    except KeyError:
        raise UnknownStep(name) from None


def find_workflow(name: str) -> WorkflowDef | None:
    """Return the workflow registered under ``name``, or None."""
    return _workflows.get(name)


def find_step(name: str) -> StepDef | None:
    """Return the step registered under ``name``, or None."""
    return _steps.get(name)


def replace_step(definition: StepDef) -> None:
    """Put ``definition`` in place of the step of its name (the testing kit's fault injection;
    use it inside :func:`scope`, which restores the original)."""
    with _lock:
        _steps[definition.name] = definition


@contextlib.contextmanager
def scope(*, redefine: bool = False) -> Iterator[None]:
    """Forget, when the block ends, every registration and replacement made in it (tests).

    ``redefine``: inside the block a different function may take a registered name
    (a test's second version of a workflow); the first one is back after the block.
    """
    global _redefine
    with _lock:
        saved = dict(_workflows), dict(_steps), list(_step_listeners), _redefine
        _redefine = _redefine or redefine
    errors = declared_names()
    try:
        yield
    finally:
        restore_declared(errors)
        with _lock:
            _workflows.clear()
            _workflows.update(saved[0])
            _steps.clear()
            _steps.update(saved[1])
            _step_listeners[:] = saved[2]
            _redefine = saved[3]


def workflows() -> list[WorkflowDef]:
    """Return every registered workflow."""
    return list(_workflows.values())


def steps() -> list[StepDef]:
    """Return every registered step."""
    return list(_steps.values())


def on_step_registered(listener: Callable[[StepDef], None]) -> None:
    """Call ``listener`` for every step registered so far and from now on."""
    with _lock:
        _step_listeners.append(listener)
        known = list(_steps.values())
    for definition in known:
        listener(definition)


def load_imports(modules: tuple[str, ...] | list[str]) -> None:
    """Import the modules that define workflows (``WORKFLOWS_IMPORTS``)."""
    for module in modules:
        importlib.import_module(module)


def check_arguments(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    """Raise InvalidArguments unless ``fn(*args, **kwargs)`` would bind."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise InvalidArguments(f"arguments do not match {what}: {exc}") from None
    except ValueError:  # no signature to check (a builtin): the call itself will tell
        return
