"""The project's Celery app, made the Django way: ``celery -A shop_site worker`` runs its tasks and workflow steps."""

import os

from celery import Celery

import workflows

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop_site.settings")

app = Celery("shop_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()  # each installed app's tasks.py
# Each installed app's flows.py: its workflows and steps are registered when the worker imports its
# modules, after Celery's Django fix-up has called django.setup(), so they may import models.
app.autodiscover_tasks(related_name="flows")
workflows.install(app)  # the engine's tasks and queues, on this app's broker
