"""Settings of the example shop: SQLite in a file, and Celery's settings under the ``CELERY_`` namespace.

``SHOP_DATA_DIR`` is the directory of the SQLite file (default: this project's directory).
The broker and the queue prefix must be those of the workflows settings, which
``workflows.install(app)`` checks: ``WORKFLOWS_QUEUE_PREFIX`` and ``AWS_DEFAULT_REGION`` are
read here too.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("SHOP_DATA_DIR", BASE_DIR))

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-example-key-set-DJANGO_SECRET_KEY-in-production")
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]

INSTALLED_APPS = ["shop"]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
ROOT_URLCONF = "shop_site.urls"
WSGI_APPLICATION = "shop_site.wsgi.application"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "db.sqlite3",
        # The web process and the worker's threads or children write the same file: a transaction
        # takes the write lock when it begins, and a writer waits for another up to 20 s.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"

# Celery (read by shop_site/celery.py with namespace="CELERY"). SQS: ``sqs://`` on AWS (the role's
# credentials), ``sqs://KEY:SECRET@host:port`` for a local stack (SHOP_BROKER_URL).
CELERY_BROKER_URL = os.environ.get("SHOP_BROKER_URL", "sqs://")
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "region": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    "queue_name_prefix": os.environ.get("WORKFLOWS_QUEUE_PREFIX", "workflows-"),
    "wait_time_seconds": 1,
    "visibility_timeout": 60,
}
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_BACKEND = None
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
