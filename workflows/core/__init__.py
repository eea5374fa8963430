"""The core: the replay engine over its ports (Store, Transport, Clock).

Nothing here imports celery, kombu, boto3, botocore or pynamodb; the adapters
(``persistence``, ``workflows.celery``, ``beat``) and the composition root
(``workflows.runtime``) do.
"""
