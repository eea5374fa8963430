"""Workflows of the deterministic helpers', replay-safe logger's and completion criteria's end-to-end tests."""

from __future__ import annotations

import time
from typing import Any

import workflows
from tests.e2e.flows import bump
from workflows import FatalError, sleep, step, workflow


@step
def det_e2e_echo(value: Any) -> Any:
    return value


@workflow
def det_e2e_values(tag: str) -> dict[str, Any]:
    """Values taken, logged, sent to a step, and compared after a sleep (a replay in a worker)."""
    taken = [str(workflows.uuid4()), workflows.random(), workflows.now().timestamp()]
    workflows.logger.info("det-e2e %s took %s", tag, taken[0])
    echoed = det_e2e_echo(taken)
    workflows.logger.info("det-e2e %s echoed", tag)
    sleep(1)
    workflows.logger.info("det-e2e %s woke", tag)
    return {"taken": taken, "echoed": echoed, "later": workflows.now().timestamp()}


@step(retries=0)
def det_e2e_branch(tag: str, index: int, mode: str) -> int:
    if mode == "fail":
        raise FatalError(f"branch {index} broke")
    if mode == "slow":
        time.sleep(3)
        bump(f"{tag}-slow-done")
    return index * 10


@workflow
def det_e2e_quorum(tag: str, modes: list[str]) -> dict[str, Any]:
    """Complete when two branches succeeded (one failure tolerated); then outlive the slow branch."""
    done = workflows.parallel(*(det_e2e_branch.s(tag, i, mode) for i, mode in enumerate(modes)),
                              min_successful=2, tolerated_failures=1)
    sleep(5)  # the slow branch ends meanwhile; the replay after the sleep reads the decision again
    return {"results": {str(i): v for i, v in done.results.items()}, "failed": done.failed,
            "unfinished": done.unfinished}


@workflow
def det_quorum_sum(n: int) -> str:
    """A fan-out done when two of ``n`` adds succeeded (the crash tests kill a worker around its tally)."""
    done = workflows.parallel(*(det_e2e_add.s(i) for i in range(n)), min_successful=2)
    wrong = {i: v for i, v in done.results.items() if v != 2 * i}
    return "ok" if len(done.succeeded) >= 2 and not wrong and not done.failed else f"wrong: {done}"


@step
def det_e2e_add(i: int) -> int:
    return i + i
