"""Trace context in engine messages: a Celery message header, never the stored payload.

The transport adds :func:`outgoing` to the headers of every step and resume message it
sends, and a worker runs each task inside :func:`incoming` of the header it received. Both
do nothing until a tracer installs its carrier functions (``workflows.observe.otel``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, ContextManager

#: The message header that carries the W3C trace context (``traceparent``, ``tracestate``).
HEADER = "workflows_trace"

Inject = Callable[[], "dict[str, str]"]
Extract = Callable[["dict[str, str]"], ContextManager[None]]

_inject: Inject | None = None
_extract: Extract | None = None


def install(inject: Inject, extract: Extract) -> None:
    """Let a tracer write and read the trace header of this process's messages."""
    global _inject, _extract
    _inject, _extract = inject, extract


def outgoing() -> dict[str, Any]:
    """The headers to add to a message sent now (none when tracing is off)."""
    carrier = _inject() if _inject is not None else None
    return {HEADER: carrier} if carrier else {}


def incoming(carrier: Any) -> ContextManager[None]:
    """Make a received message's trace context current for the block (if tracing is on)."""
    if _extract is None or not isinstance(carrier, dict):
        return contextlib.nullcontext()
    return _extract({str(k): str(v) for k, v in carrier.items()})
