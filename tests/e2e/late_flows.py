"""A workflow the session's workers do not import: it stands for code a rolling deploy has
not brought to every worker yet (tests/e2e/test_versioning.py starts a worker that has it)."""

from __future__ import annotations

from workflows import patched, step, workflow


@step(inline=True)
def late_greet(tag: str) -> str:
    return f"hello {tag}"


@workflow
def late_arrival(tag: str) -> str:
    greeting = late_greet(tag)
    return f"{greeting} (new path)" if patched("late-new-path") else greeting
