"""Counts the store's DynamoDB requests for the run being worked on (``workflows.core.storage.metering``).

PynamoDB signals every API call it makes (``pre_dynamodb_send``, once per call: a retry
inside botocore is not signalled again); the store connects to it once per process.
"""

from __future__ import annotations

import threading
from typing import Any

from pynamodb.signals import pre_dynamodb_send

from workflows.core.storage.metering import count_dynamodb

_lock = threading.Lock()
_installed = False


def _counted(sender: Any, operation_name: str, **_: Any) -> None:
    count_dynamodb(operation_name)


def install() -> None:
    """Count this process's DynamoDB requests (idempotent; needs blinker, a dependency)."""
    global _installed
    with _lock:
        if not _installed:
            pre_dynamodb_send.connect(_counted, weak=False)
            _installed = True
