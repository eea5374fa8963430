"""Structured logs: every record carries the run, workflow, step and position it is about.

:class:`LogContext` is an observer that binds the run (at a resume) and the step (at an
attempt) in a context variable; :class:`ContextFilter` copies them onto each log record
(``run_id``, ``workflow``, ``step``, ``pos``; ``-`` outside a run), taking the position of
the op a replay is at when no step runs. :class:`JsonFormatter` writes one JSON object a
line (``WORKFLOWS_LOG_FORMAT=json``).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from dataclasses import dataclass, replace
from typing import Any, ContextManager, Iterator

from ..core.model.records import RunRecord
from ..core.replay.context import current_workflow
from ..core.replay.observer import NullObserver, StepAttempt

#: The record attributes the filter sets, in the order the text format shows them.
FIELDS = ("run_id", "workflow", "step", "pos")


@dataclass(frozen=True)
class Bound:
    """What the current log lines are about."""

    run_id: str | None = None
    workflow: str | None = None
    step: str | None = None
    pos: int | None = None


_bound: contextvars.ContextVar[Bound] = contextvars.ContextVar("workflows_log", default=Bound())  # noqa: B039 - frozen


def bound() -> Bound:
    """What this thread's log lines are about now."""
    return _bound.get()


@contextlib.contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Bind fields (of :class:`Bound`) to the log lines of the block."""
    token = _bound.set(replace(_bound.get(), **fields))
    try:
        yield
    finally:
        _bound.reset(token)


class LogContext(NullObserver):
    """Binds the run of a resume and the step of an attempt to log lines."""

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return bind(run_id=run_id, step=None, pos=None)

    def replaying(self, run: RunRecord) -> None:
        current = _bound.get()
        if current.run_id == run.run_id and current.workflow != run.workflow:
            _bound.set(replace(current, workflow=run.workflow))  # undone when the resume's bind ends

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        return bind(run_id=op.run_id, workflow=op.workflow or None, step=op.step, pos=op.pos)


class ContextFilter(logging.Filter):
    """Sets ``run_id``, ``workflow``, ``step`` and ``pos`` on every record (``-`` when unknown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _bound.get()
        pos, step = fields.pos, fields.step
        if step is None and (ctx := current_workflow()) is not None and ctx.run.run_id == fields.run_id:
            pos = ctx.op[0] if ctx.op[0] >= 0 else None
        for name, value in (("run_id", fields.run_id), ("workflow", fields.workflow), ("step", step), ("pos", pos)):
            if getattr(record, name, None) in (None, "-"):
                setattr(record, name, "-" if value is None else value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the run fields, and any exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            "process": record.process,
        }
        for name in FIELDS:
            value = getattr(record, name, "-")
            entry[name] = None if value == "-" else value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """Another formatter's line, followed by the run fields when the record is about a run."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        if getattr(record, "run_id", "-") == "-":
            return line
        fields = " ".join(f"{name}={getattr(record, name, '-')}" for name in FIELDS)
        head, newline, rest = line.partition("\n")  # after the message, before any traceback
        return f"{head} [{fields}]{newline}{rest}"


def formatter(log_format: str, inner: logging.Formatter | None = None) -> logging.Formatter:
    """The formatter of ``log_format``: ``json``, or ``text`` (``inner``'s line plus the run fields)."""
    if isinstance(inner, (JsonFormatter, TextFormatter)):
        inner = inner.inner if isinstance(inner, TextFormatter) else None
    return JsonFormatter() if log_format == "json" else TextFormatter(inner)


def install_filter(handler: logging.Handler) -> None:
    """Add the context filter to ``handler`` once."""
    if not any(isinstance(f, ContextFilter) for f in handler.filters):
        handler.addFilter(ContextFilter())


def configure_logging(log_format: str, logger: logging.Logger | None = None) -> None:
    """Give every handler of ``logger`` (the root logger by default) the run fields and
    ``log_format``'s formatter (text keeps the handler's own line); with no handler, add one on stderr."""
    logger = logger or logging.getLogger()
    if not logger.handlers:
        logger.addHandler(logging.StreamHandler())
    for handler in logger.handlers:
        install_filter(handler)
        handler.setFormatter(formatter(log_format, handler.formatter))
