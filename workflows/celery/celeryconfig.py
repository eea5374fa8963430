"""The Celery configuration (:mod:`workflows.celery.config`) as module globals, read from the
settings when imported: for ``app.config_from_object("workflows.celery.celeryconfig")`` and
Celery's ``--config`` option. ``workflows.celeryconfig``, its old path, still works for one
release (a ``DeprecationWarning``); the repository's top-level ``celeryconfig.py`` reads it."""

from ..settings import get_settings
from .config import celery_config

globals().update(celery_config(get_settings()))
