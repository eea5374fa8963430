"""Celery configuration of the workflows app, read from the environment via the settings object.

The app (``workflows.app:app``) reads the same configuration, ``workflows.celery.config``; this
file is for running Celery's own commands with ``--config celeryconfig`` from the repository
root. It is not installed as a top-level module.
"""

from workflows.celery.celeryconfig import *  # noqa: F403 - the configuration's globals
