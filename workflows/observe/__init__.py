"""Observing the engine: structured logs, Prometheus metrics, OpenTelemetry traces, cost per run.

Each is an adapter of the core's ``Observer`` port (``workflows.core.replay.observer``), built by
:func:`build_observer` from the settings and wired by the composition root. Metrics and
traces need their extras (``metrics``, ``otel``); logs and cost counting need nothing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import ConfigurationError


def require(module: str, extra: str) -> ModuleType:
    """Import an optional library, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(f"{module} is not installed: pip install 'celery-durable-workflows[{extra}]'") from exc
