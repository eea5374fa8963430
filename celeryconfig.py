"""Celery configuration of the workflows app, read from the environment via the settings object."""

from workflows.celery_config import celery_config
from workflows.settings import get_settings

globals().update(celery_config(get_settings()))
