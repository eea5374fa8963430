"""The transport of a process that only starts and signals runs: Celery, send-only.

It builds a Celery app with the workflows configuration but registers no task and
imports no workflow module, so ``start()`` from a web process stays light.
"""

from __future__ import annotations

from celery import Celery

from ..settings import Settings
from .config import celery_config
from .transport import CeleryTransport


def producer_transport(settings: Settings) -> CeleryTransport:
    """A send-only Celery transport for ``settings``."""
    celery = Celery("workflows-producer")
    config = celery_config(settings)
    config["imports"] = []
    celery.conf.update(config)
    return CeleryTransport(celery)
