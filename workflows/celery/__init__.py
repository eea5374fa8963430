"""The Celery adapter: the app, its configuration, the engine's tasks and the SQS transport.

- ``app``: the Celery app of ``celery -A workflows.app worker`` (``workflows.app`` names it).
- ``config``: the one Celery configuration, built from the typed settings.
- ``install``: ``workflows.install(app)``, for an existing Celery app.
- ``tasks``, ``task_steps``: the resume and step tasks; Celery tasks made into steps.
- ``transport``, ``producer``: the Transport port over Celery (a worker's, a send-only one).
- ``visibility``, ``deadletter``, ``sqs``: SQS visibility upkeep, the dead-letter queue, and
  kombu's SQS transport hardened.

Nothing here is imported by the core: the engine reaches Celery only through the Transport port.
"""
