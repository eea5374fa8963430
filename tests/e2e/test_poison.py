"""Poison messages are set aside on the dead-letter queue, never retried forever."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import boto3
import pytest

from tests.waiting import holds_within
from workflows.celery.app import app
from workflows.celery.deadletter import list_dead_letters

pytestmark = pytest.mark.e2e


def wait_for_letters(predicate, timeout: float = 30.0) -> list[dict]:  # type: ignore[no-untyped-def]
    """Collect dead letters across polls (a letter read by one poll is hidden for a second)."""
    seen: dict[str, dict] = {}

    def collected() -> bool:
        for letter in list_dead_letters(1000):
            seen[json.dumps(letter, sort_keys=True)] = letter
        return bool(predicate(list(seen.values())))

    holds_within(collected, timeout, poll=1.5)
    return list(seen.values())


def test_unknown_task_undecodable_body_and_unknown_run_are_dead_lettered(cluster, settings) -> None:
    marker = uuid.uuid4().hex
    app.send_task(f"workflows.step.no_such_step_{marker}", args=[], queue="steps")
    sqs = boto3.client("sqs", region_name=settings.region, endpoint_url=settings.sqs_endpoint)
    url = sqs.get_queue_url(QueueName=settings.queue_prefix + "workflows")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=f"not json at all {marker}")
    app.send_task("workflows.resume", args=[f"unknown-run-{marker}"], queue="workflows")

    def complete(letters: list[dict]) -> bool:
        return sum(marker in json.dumps(letter) for letter in letters) >= 3

    letters = [letter for letter in wait_for_letters(complete) if marker in json.dumps(letter)]
    reasons = sorted(letter["reason"].split(":")[0] for letter in letters)
    assert len(letters) == 3, letters
    assert any(r.startswith("unknown task") for r in reasons)
    assert any(r.startswith("resume message for an unknown run") for r in reasons)
    assert any(r.startswith("undecodable") or r.startswith("not a task") for r in reasons)


def test_dlq_cli_lists_letters(cluster) -> None:
    out = subprocess.run([sys.executable, "-m", "workflows", "dlq", "list", "--limit", "50"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "dead letter(s) shown" in out.stdout
