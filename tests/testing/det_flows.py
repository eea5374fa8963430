"""Workflows of the deterministic helpers', replay-safe logger's and completion criteria's tests."""

from __future__ import annotations

from typing import Any

import workflows
from workflows import FanOutFailed, FatalError, InvalidInput, sleep, step, workflow

#: Values each call of a workflow function saw, by label (tests reset it).
SEEN: list[tuple[str, Any]] = []


@step
def det_echo(value: Any) -> Any:
    return value


@step(inline=True)
def det_inline_echo(value: Any) -> Any:
    return value


@workflow
def det_values() -> dict[str, Any]:
    """Take one of each value, hop (a sleep and a sent step), and return what each replay saw."""
    when, ident, draw = workflows.now(), workflows.uuid4(), workflows.random()
    SEEN.append(("before", (when, ident, draw)))
    sleep("1h")
    echoed = det_echo(str(ident))
    later = workflows.now()
    return {"when": when.timestamp(), "uuid": str(ident), "random": draw, "echoed": echoed,
            "later": later.timestamp()}


@workflow
def det_inline_values(n: int) -> list[str]:
    """Values passed straight to inline steps (the value must be durable before the step runs)."""
    return [det_inline_echo(workflows.uuid4().hex) for _ in range(n)]


@workflow
def det_logged(n: int) -> str:
    """Logs before and between ops: each line once, however often the function replays."""
    workflows.logger.info("starting %s", n)
    det_echo(n)
    workflows.logger.info("echoed")
    sleep("1h")
    for i in range(n):
        workflows.logger.info("tick %s", i, extra={"tick": i})
        sleep("1m")
    workflows.logger.warning("done")
    return "done"


@step(retries=0)
def det_branch(index: int, fail: bool = False) -> int:
    """A branch: its index squared, or a failure (no retries)."""
    if fail:
        raise FatalError(f"branch {index} broke")
    return index * index


@workflow
def det_quorum(width: int, failing: list[int], least: int | None, tolerated: int | None) -> dict[str, Any]:
    """A fan-out with completion criteria; then a sleep, so the result is also read on replay."""
    try:
        done = workflows.parallel(*(det_branch.s(i, i in failing) for i in range(width)),
                                  min_successful=least, tolerated_failures=tolerated)
    except FanOutFailed as failed:
        return {"failed": sorted(failed.failures), "succeeded": failed.succeeded, "error": str(failed)}
    sleep("1h")
    return {"values": done.values(), "succeeded": done.succeeded, "failed": done.failed,
            "unfinished": done.unfinished}


@workflow
def det_bad_criteria(least: int, return_exceptions: bool) -> str:
    try:
        det_branch.map(range(2), min_successful=least, return_exceptions=return_exceptions)
    except InvalidInput as bad:
        return str(bad)
    return "accepted"
