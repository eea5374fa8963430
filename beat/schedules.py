"""The old home of schedule firing (now ``workflows.core.background.firing``) and of declared schedules
(now ``beat.declared``), importable from here for one release with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from typing import Any

from beat import declared
from workflows.core.background import firing

warnings.warn("beat.schedules moved: schedule firing to workflows.core.background.firing, "
              "declared schedules to beat.declared "
              "(beat.schedules goes in the next release)", DeprecationWarning, stacklevel=2)


def __getattr__(name: str) -> Any:
    for module in (firing, declared):
        if not name.startswith("_") and hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module 'beat.schedules' has no attribute {name!r}")
