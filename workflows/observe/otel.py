"""OpenTelemetry traces of the engine: an observer over the OpenTelemetry API.

One run is one trace, in every process: the trace id is derived from the run id, so a span
whose message carried no trace context (a resume sent by beat's timer, a recovery) still joins
its run's trace; a message that carries one (``propagation``) makes the sender's span the
parent. The process that ends a run emits the run's root span (creation to end) with the
derived span id that the others use as their fallback parent.

Spans: ``resume <workflow>``, ``step <name>`` (one per attempt), ``wait <kind>`` (a suspension),
``timer <kind>`` (a due timer fired by beat), ``recover`` and ``run <workflow>`` (the root).
Attributes: ``workflows.run_id``, ``workflows.workflow``, ``workflows.step``,
``workflows.position``, ``workflows.attempt`` and more, listed in docs/observability.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from typing import Any, ContextManager, Iterator, Sequence

from ..core.model.records import RunRecord, TimerRecord
from ..core.replay.observer import NullObserver, StepAttempt
from ..settings import Settings
from . import propagation, require

trace = require("opentelemetry.trace", "otel")
from opentelemetry import context as otel_context  # noqa: E402 - after the install hint
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags  # noqa: E402
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator  # noqa: E402

require("opentelemetry.sdk.trace", "otel")
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult  # noqa: E402

from ..core.model.states import EventStatus, RunStatus  # noqa: E402

SCOPE = "workflows"
_propagator = TraceContextTextMapPropagator()


def run_trace(run_id: str) -> tuple[int, int]:
    """The trace id of a run and the span id of its root span (derived, the same everywhere)."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def run_parent(run_id: str) -> tuple[Any, list[Link]]:
    """The parent context of a span of ``run_id``: the current span if it is in the run's trace,
    else the run's root span (the current span, from another trace, then becomes a link)."""
    trace_id, root = run_trace(run_id)
    current = trace.get_current_span().get_span_context()
    if current.is_valid and current.trace_id == trace_id:
        return None, []
    links = [Link(current)] if current.is_valid else []
    parent = SpanContext(trace_id, root, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return trace.set_span_in_context(NonRecordingSpan(parent)), links


class Tracing(NullObserver):
    """Spans of resumes, step attempts, waits, timers, recoveries and runs."""

    def __init__(self, tracer_provider: Any = None) -> None:
        self.provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = self.provider.get_tracer(SCOPE)
        propagation.install(inject, extract)

    @contextlib.contextmanager
    def _span(self, name: str, run_id: str, attributes: dict[str, Any], kind: Any = SpanKind.INTERNAL) -> Iterator[Any]:
        parent, links = run_parent(run_id)
        with self.tracer.start_as_current_span(name, context=parent, links=links, kind=kind,
                                               attributes={"workflows.run_id": run_id, **attributes}) as span:
            yield span

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return self._span("resume", run_id, {"workflows.recovering": recovering}, SpanKind.CONSUMER)

    def replaying(self, run: RunRecord) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.update_name(f"resume {run.workflow}")
            span.set_attributes({"workflows.workflow": run.workflow, "workflows.position": run.cursor})

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        attributes: dict[str, Any] = {"workflows.workflow": op.workflow, "workflows.step": op.step,
                                      "workflows.position": op.pos, "workflows.attempt": op.attempt}
        if op.branch is not None:
            attributes["workflows.branch"] = op.branch
        return self._span(f"step {op.step}", op.run_id, attributes)

    def attempt_ended(self, op: StepAttempt, status: str, error: str | None) -> None:
        span = trace.get_current_span()
        span.set_attribute("workflows.outcome", status)
        if status != EventStatus.COMPLETED:
            span.set_status(Status(StatusCode.ERROR, (error or status)[:500]))

    def waiting(self, run: RunRecord, pos: int, waiting: dict[str, Any]) -> None:
        kind = str(waiting.get("kind", "?"))
        attributes = {"workflows.workflow": run.workflow, "workflows.position": pos, "workflows.wait.kind": kind}
        for key in ("name", "due"):
            if waiting.get(key) is not None:
                attributes[f"workflows.wait.{key}"] = waiting[key]
        with self._span(f"wait {kind}", run.run_id, attributes):
            pass

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        attributes: dict[str, Any] = {"workflows.timer.kind": timer.kind, "workflows.timer.lag": lag}
        if timer.pos is not None:
            attributes["workflows.position"] = timer.pos
        return self._span(f"timer {timer.kind}", timer.run_id, attributes, SpanKind.PRODUCER)

    def recovered(self, run: RunRecord) -> None:
        with self._span("recover", run.run_id, {"workflows.workflow": run.workflow,
                                                 "workflows.recoveries": run.recoveries}):
            pass

    def run_ended(self, run: RunRecord) -> None:
        emit_run_span(self.provider, run)


def emit_run_span(provider: Any, run: RunRecord) -> None:
    """Export the run's root span (creation to end) with its derived id (SDK providers only)."""
    processor = getattr(provider, "_active_span_processor", None)
    if processor is None:
        return
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    trace_id, root = run_trace(run.run_id)
    context = SpanContext(trace_id, root, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    ended = run.ended_at if run.ended_at is not None else run.created_at
    status = Status(StatusCode.OK) if run.status == RunStatus.COMPLETED else Status(StatusCode.ERROR, run.status)
    span = ReadableSpan(f"run {run.workflow}", context=context, parent=None, resource=provider.resource,
                        attributes={"workflows.run_id": run.run_id, "workflows.workflow": run.workflow,
                                    "workflows.status": run.status},
                        kind=SpanKind.INTERNAL, status=status, start_time=int(run.created_at * 1e9),
                        end_time=int(ended * 1e9), instrumentation_scope=InstrumentationScope(SCOPE))
    processor.on_end(span)


def inject() -> dict[str, str]:
    """The W3C trace context of the current span."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier


@contextlib.contextmanager
def extract(carrier: dict[str, str]) -> Iterator[None]:
    """Make the trace context of ``carrier`` current for the block."""
    token = otel_context.attach(_propagator.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


class JsonLinesExporter(SpanExporter):
    """A span exporter that appends each span as one JSON line to a file (tests, debugging)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        lines = "".join(json.dumps(json.loads(span.to_json()), separators=(",", ":")) + "\n" for span in spans)
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(lines)  # one write of whole lines: processes appending to one file do not interleave
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def tracing(settings: Settings) -> Tracing:
    """The tracing observer ``settings.traces`` asks for, with its tracer provider."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    mode = settings.traces or "otel"
    if mode.startswith("file:"):
        provider = TracerProvider(resource=Resource.create({"service.name": "workflows"}))
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(mode[len("file:"):])))
        return Tracing(provider)
    current = trace.get_tracer_provider()
    if hasattr(current, "add_span_processor"):  # the application configured the SDK: use its provider
        return Tracing(current)
    exporter_module = require("opentelemetry.exporter.otlp.proto.http.trace_exporter", "otel")
    provider = TracerProvider(resource=Resource.create({"service.name": "workflows"}))
    provider.add_span_processor(BatchSpanProcessor(exporter_module.OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return Tracing(provider)
