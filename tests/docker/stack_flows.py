"""Workflows of the compose stack's test, mounted into its containers as ``dockertests.stack_flows``.

Only ``test_compose_stack.py`` uses them (with an override file that adds this directory to
the image's ``/app`` and this module to ``WORKFLOWS_IMPORTS``); nothing on the host imports them.
"""

from __future__ import annotations

import logging
import socket
import time

from workflows import step, workflow

log = logging.getLogger(__name__)


@step
def where(i: int, seconds: float) -> str:
    """Take ``seconds``, and say which container ran it (its hostname)."""
    time.sleep(seconds)
    return socket.gethostname()


@workflow
def burst_run(i: int, seconds: float) -> dict[str, object]:
    return {"i": i, "worker": where(i, seconds)}


@step
def slow(tag: str, seconds: float) -> str:
    """A step long enough to kill its worker in the middle; each start is one line in the worker's log."""
    log.warning("stack_flows: slow step %s started on %s", tag, socket.gethostname())
    time.sleep(seconds)
    return f"slept {tag}"


@workflow
def slow_run(tag: str, seconds: float) -> str:
    return slow(tag, seconds)
