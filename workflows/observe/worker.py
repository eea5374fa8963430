"""Observability of Celery processes (workers and beat): log format, and ``/metrics``.

Connected to Celery's signals by ``workflows.celery.tasks.install``: once Celery has set up
logging, every handler gets the run fields (and the JSON format if asked); when a worker
or beat starts, it serves its metrics on ``WORKFLOWS_METRICS_PORT`` if set (one port a
process: a prefork worker serves from its main process, merging its children's values
through ``PROMETHEUS_MULTIPROC_DIR``).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import signals

from ..settings import get_settings

log = logging.getLogger("workflows.observe")
_connected = False


def _logging_set_up(logger: logging.Logger | None = None, **_: Any) -> None:
    from .logs import configure_logging

    configure_logging(get_settings().log_format, logger)


def _process_started(**_: Any) -> None:
    settings = get_settings()
    if settings.metrics_port is None:
        return
    from .metrics import serve

    try:
        serve(settings.metrics_port)
    except OSError:
        log.exception("could not serve metrics on port %d", settings.metrics_port)


def install() -> None:
    """Connect the signal handlers (once a process)."""
    global _connected
    if _connected:
        return
    _connected = True
    signals.after_setup_logger.connect(_logging_set_up, weak=False)
    signals.after_setup_task_logger.connect(_logging_set_up, weak=False)
    signals.worker_init.connect(_process_started, weak=False)
    signals.beat_init.connect(_process_started, weak=False)
