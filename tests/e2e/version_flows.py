"""Workflows of the fork and rerun end-to-end tests; the session's workers import this module."""

from __future__ import annotations

from tests.e2e.flows import bump, counter_dir
from workflows import FatalError, step, workflow


@step
def fix_first(tag: str) -> int:
    return bump(f"{tag}-first")


@step
def fix_second(tag: str, first: int) -> int:
    """Fails while the file ``broken-<tag>`` exists (the bug), then works (the fix is deployed)."""
    bump(f"{tag}-second")
    if (counter_dir() / f"broken-{tag}").exists():
        raise FatalError(f"{tag} is broken")
    return first * 10


@step(inline=True)
def fix_third(tag: str, second: int) -> int:
    bump(f"{tag}-third")
    return second + 1


@workflow
def fixable(tag: str) -> int:
    first = fix_first(tag)
    second = fix_second(tag, first)
    return fix_third(tag, second)
