"""The command line, ``workflows`` (``python -m workflows``): one module per command group.

``commands`` builds the parser and holds the run, worker, beat, setup, hooks, dead-letter
and replay commands; ``aws``, ``deferred``, ``flow``, ``forks``, ``payloads`` and
``schedules`` add their groups to it. :func:`main` is the console script's entry point.
"""

from __future__ import annotations

import warnings
from typing import Any

from .commands import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    """The names of the old ``workflows/cli.py`` module, for one release (a ``DeprecationWarning``)."""
    from . import commands

    if name.startswith("__") or not hasattr(commands, name):
        raise AttributeError(f"module 'workflows.cli' has no attribute {name!r}")
    warnings.warn(f"workflows.cli.{name} moved to workflows.cli.commands.{name} (the old name goes in the next "
                  "release)", DeprecationWarning, stacklevel=2)
    return getattr(commands, name)
