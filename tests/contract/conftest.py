"""The store contract runs against every Store: DynamoDB (a moto server over HTTP) and memory.

The DynamoDB variant uses tables of its own prefix (created once), so no worker or
beat of the session touches its items, and each test uses fresh ids. Its clock is
a ManualClock started at the real time: tests move it to travel in time. The
memory variant needs no server (``-k memory`` starts none).
"""

from __future__ import annotations

import time
import uuid

import pytest

from workflows.memory import ManualClock, MemoryStore
from workflows.settings import Settings

LEASE_SECONDS = 30.0


@pytest.fixture()
def clock() -> ManualClock:
    """A clock the test moves; it starts at the real time."""
    return ManualClock(time.time())


@pytest.fixture(scope="session")
def contract_settings(settings: Settings) -> Settings:
    """Settings of the contract's own DynamoDB tables."""
    from persistence.provision import create_tables

    own = settings.with_(table_prefix=f"c{uuid.uuid4().hex[:6]}-", lease_seconds=LEASE_SECONDS)
    create_tables(own)
    return own


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest, clock: ManualClock):  # type: ignore[no-untyped-def]
    """Each Store implementation, on the test's clock."""
    if request.param == "memory":
        return MemoryStore(Settings(lease_seconds=LEASE_SECONDS), clock=clock)
    from persistence import DynamoStore

    return DynamoStore(request.getfixturevalue("contract_settings"), clock=clock)
