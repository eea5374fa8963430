"""The testing kit: workflows in process on the in-memory ports, with time skipping, and
replay of recorded histories against the current code. See docs/testing.md.

Public names resolve lazily, so the pytest plugin loads nothing of the engine until a
test asks for ``workflow_env``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    **dict.fromkeys(["EnvRunHandle", "StepView", "WorkflowEnv"], "workflows.testing.env"),
    "FailureInjection": "workflows.testing.faults",
    **dict.fromkeys(["ReplayReport", "replay"], "workflows.testing.replayer"),
    "redefinable": "workflows.testing.replayer",
}

__all__ = ["EnvRunHandle", "FailureInjection", "ReplayReport", "StepView", "WorkflowEnv", "redefinable", "replay"]

if TYPE_CHECKING:
    from .env import EnvRunHandle, StepView, WorkflowEnv
    from .faults import FailureInjection
    from .replayer import ReplayReport, redefinable, replay


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workflows.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
