"""The pytest plugin of the testing kit (registered by the ``pytest11`` entry point).

Fixtures:
    workflow_env: a :class:`~workflows.testing.WorkflowEnv`, entered for the test and
        closed after it (nothing it registered or stored outlives the test).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from .env import WorkflowEnv


@pytest.fixture()
def workflow_env() -> Iterator[WorkflowEnv]:
    """An in-memory engine with a virtual clock, the process's engine for the test."""
    from .env import WorkflowEnv

    with WorkflowEnv() as env:
        yield env
