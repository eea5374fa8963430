"""Session fixtures: a real moto server over HTTP, with a fresh table/queue prefix per session."""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import pytest

from workflows.settings import Settings, configure

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if IN_CI:
            pytest.fail(f"{module} is required in CI (pip install -e '.[dev]')")
        pytest.skip(f"SKIPPED LOUDLY: {module} is not installed; these tests need a local AWS server")


@pytest.fixture(scope="session")
def aws_env() -> Iterator[dict[str, str]]:
    """Start the local AWS server once and point this process (and its children) at it."""
    _need("moto")
    from workflows.localstack import LocalAWS

    server = LocalAWS().start()
    session = uuid.uuid4().hex[:8]
    env = {**server.environ(), "WORKFLOWS_TABLE_PREFIX": f"t{session}-", "WORKFLOWS_QUEUE_PREFIX": f"q{session}-",
           "WORKFLOWS_SWEEP_INTERVAL": "0.25", "WORKFLOWS_LEASE_SECONDS": "6", "WORKFLOWS_VISIBILITY_TIMEOUT": "20",
           "WORKFLOWS_POLL_WAIT_SECONDS": "1", "WORKFLOWS_IMPORTS": "tests.e2e.flows,tests.e2e.hook_flows"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    configure(Settings.from_env())
    try:
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        configure(None)
        server.stop()


@pytest.fixture(scope="session")
def settings(aws_env: dict[str, str]) -> Settings:
    """Settings of the session, with every table and queue created."""
    from persistence.provision import create_queues, create_tables

    current = Settings.from_env()
    create_tables(current)
    create_queues(current, ["payments"])
    return current


@pytest.fixture()
def store(settings: Settings):  # type: ignore[no-untyped-def]
    """The store of the session."""
    from persistence import get_store

    return get_store(settings)
