"""The project's Celery app: ``celery -A proj worker`` runs its tasks and its workflow steps."""

from celery import Celery

import workflows

app = Celery("proj", include=["proj.tasks", "proj.flows"])
app.config_from_object("proj.settings", namespace="CELERY")
workflows.install(app)  # the one line: the engine's tasks and queues, on this app's broker
