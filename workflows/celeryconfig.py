"""The Celery configuration module of ``workflows.app``, built from the typed settings.

Celery imports it lazily, when the app is first used, so the settings are read
then (not when ``workflows.app`` is imported). It lives inside the package so it
never shadows, or is shadowed by, a user's own top-level ``celeryconfig``.
"""

from .celery_config import celery_config
from .settings import get_settings

globals().update(celery_config(get_settings()))
