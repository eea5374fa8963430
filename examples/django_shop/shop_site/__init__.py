"""The example's Django project. Loading it loads its Celery app, as in any Django project with Celery:
``shared_task``s and ``workflow.start()`` in views then publish through that app."""

from .celery import app as celery_app

__all__ = ("celery_app",)
