"""The command line, ``workflows`` (``python -m workflows``): one module per command group.

``main`` builds the parser and holds the run, worker and setup commands; ``aws``, ``flow``,
``forks``, ``payloads`` and ``schedules`` add their groups to it.
"""

from .main import main

__all__ = ["main"]
