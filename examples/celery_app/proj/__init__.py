"""An existing Celery project into which workflows are installed (see README.md beside it)."""
