"""The names users give: workflows, steps and signals, and queues.

A workflow or step name becomes part of a Celery task name (``workflows.step.<name>``) and of
DynamoDB keys, where ``#`` separates it from a shard or a key value (``<workflow>#<shard>``,
``step:<step>#<key>``, a signal's ``<name>#<time>#<nonce>``): a ``#`` in a name would make two
names share keys. A queue name becomes an SQS queue name after the queue prefix. Names are
checked where they are given (at decoration, at a signal's send and wait) and refused with
:class:`~workflows.errors.InvalidName`, which names the allowed characters.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import InvalidName

#: The longest workflow, step or signal name.
MAX_NAME_LENGTH = 200
#: Besides letters and digits (any script), what a workflow, step or signal name may hold.
NAME_PUNCTUATION = "_.-:/@"
#: SQS allows 80 characters of ASCII letters, digits, ``-`` and ``_`` in a queue name, prefix included.
QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
NAME_RULE = (f"1 to {MAX_NAME_LENGTH} characters: letters, digits and any of "
             f"{' '.join(NAME_PUNCTUATION)} (no spaces, '#' or control characters)")
QUEUE_RULE = "1 to 80 characters: ASCII letters, digits, - and _ (an SQS queue name, after the queue prefix)"


def check_name(name: Any, what: str) -> str:
    """Return ``name`` if it may name a workflow, step or signal (``what`` says which).

    Raises:
        InvalidName: it is not a string of :data:`NAME_RULE`.
    """
    if (not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_LENGTH
            or not all(ch.isalnum() or ch in NAME_PUNCTUATION for ch in name)):
        raise InvalidName(f"{what} {_shown(name)} is not a valid name: use {NAME_RULE}")
    return name


def check_queue(queue: Any, what: str) -> str:
    """Return ``queue`` if it may name a queue (``what``: whose queue it is).

    Raises:
        InvalidName: it is not a string of :data:`QUEUE_RULE`.
    """
    if not isinstance(queue, str) or not QUEUE_NAME.fullmatch(queue):
        raise InvalidName(f"{what} {_shown(queue)} is not a valid queue name: use {QUEUE_RULE}")
    return queue


def task_identifier(name: str) -> str:
    """A Python identifier standing for ``name`` (Celery compiles a function named after a task's
    function; ``billing.charge`` becomes ``billing_charge``)."""
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
