"""Code versions: the stamp a run gets when it starts, and which runs a worker serves.

A run records the version of the code that started it (``RunRecord.code_version``):
``WORKFLOWS_CODE_VERSION`` when the process sets it, else ``src-`` and a short hash of the
workflow function's source. A worker configured with ``WORKFLOWS_SERVE_VERSIONS`` resumes
only runs stamped with one of those versions (and unstamped runs); the engine defers the
others to a worker that serves them (see ``Engine._defer``). See docs/versioning.md.
"""

from __future__ import annotations

import hashlib
import inspect
from functools import lru_cache
from typing import Any, Callable

from ...settings import Settings
from ..model.records import RunRecord
from ..model.registry import get_workflow

SOURCE_PREFIX = "src-"


@lru_cache(maxsize=256)
def source_version(fn: Callable[..., Any]) -> str | None:
    """``src-`` and 12 hex digits of the SHA-256 of a function's source (None if it has none)."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    return SOURCE_PREFIX + hashlib.sha256(source.encode()).hexdigest()[:12]


def code_version(settings: Settings, workflow: str) -> str | None:
    """The version this process stamps on (and replays) runs of ``workflow``."""
    if settings.code_version:
        return settings.code_version
    try:
        return source_version(get_workflow(workflow).fn)
    except Exception:  # noqa: BLE001 - an unknown workflow or an unreadable source: no stamp
        return None


def serves(settings: Settings, run: RunRecord) -> bool:
    """Whether this worker resumes ``run``: it serves every version, or the run's one (or the
    run has no stamp, as runs started before versions were recorded)."""
    return not settings.serve_versions or run.code_version is None or run.code_version in settings.serve_versions
