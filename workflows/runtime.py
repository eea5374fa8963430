"""The composition root: the engine of this process, built over its adapters.

``get_engine()`` wires the DynamoDB store (``persistence``), a Celery transport and
the system clock, and installs the run-end listener of schedules. A process that
only starts runs (a web app calling ``start()``) gets a transport that can only
send: it loads neither Celery's worker machinery nor the modules of
``WORKFLOWS_IMPORTS``. A worker (``workflows.celery.app``) replaces it with the
transport of its own app, which can also run steps in place.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

from .core.engine import Engine
from .core.replay.observer import Observer, Observers
from .core.storage.ports import Transport
from .settings import Settings, get_settings

_engines: dict[Settings, Engine] = {}
_lock = threading.Lock()
_worker_transport: Transport | None = None
_override: Engine | None = None


def get_engine(settings: Settings | None = None) -> Engine:
    """Return this process's engine for ``settings`` (the active settings by default);
    inside :func:`use_engine`, that engine whatever the settings."""
    if _override is not None:
        return _override
    settings = settings or get_settings()
    engine = _engines.get(settings)
    if engine is None:
        with _lock:
            engine = _engines.get(settings)
            if engine is None:
                engine = _engines[settings] = build_engine(settings)
    return engine


def build_engine(settings: Settings) -> Engine:
    """A new engine over the DynamoDB store and this process's Celery transport."""
    from persistence import get_store
    from workflows.core.background.firing import ensure_listener

    engine = Engine(get_store(settings), _worker_transport or _producer_transport(settings), settings,
                    observer=build_observer(settings))
    ensure_listener(engine)
    return engine


def build_observer(settings: Settings) -> Observer:
    """The observers ``settings`` enable: run fields on log lines and requests per run always;
    metrics and traces if asked."""
    from .observe.cost import RequestAttribution
    from .observe.logs import LogContext

    observers: list[Observer] = [LogContext(), RequestAttribution()]
    if settings.metrics:
        from .observe.metrics import Metrics

        observers.append(Metrics())
    if settings.traces:
        from .observe.otel import tracing

        observers.append(tracing(settings))
    return Observers(observers)


def observer() -> Observer:
    """The observer of this process's engine (for adapters that report events, e.g. dead letters)."""
    return get_engine().observer


def _producer_transport(settings: Settings) -> Transport:
    from .celery.producer import producer_transport

    return producer_transport(settings)


def use_worker_transport(transport: Transport) -> None:
    """Make ``transport`` (a worker app's) the transport of every engine of this process."""
    global _worker_transport
    _worker_transport = transport
    for engine in _engines.values():
        engine.transport = transport


@contextlib.contextmanager
def use_engine(engine: Engine) -> Iterator[Engine]:
    """Make ``engine`` the process's engine while the block runs (the testing kit's
    in-memory engine); the previous one is restored after it."""
    global _override
    previous, _override = _override, engine
    try:
        yield engine
    finally:
        _override = previous


def reset() -> None:
    """Forget every engine (tests that change settings)."""
    with _lock:
        _engines.clear()
