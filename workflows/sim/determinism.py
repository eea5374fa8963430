"""Workloads of the deterministic helpers, the replay-safe logger and fan-outs with completion criteria.

``sim_values`` passes the values it takes to a step and compares them, after a sleep, with what the
step recorded: a replay that took a new value would tell. ``sim_quorum`` is a fan-out of adds and one
failing branch that completes when two adds succeeded and tolerates that one failure: whichever
branches end first, the result must name two or more adds with their right sums, and a replay must
read the same decision. Kept apart from the basic catalogue; this module adds them to ``CATALOGUE``.
"""

from __future__ import annotations

from typing import Any

from ..core.ops.calls import parallel, sleep
from ..core.ops.replay_log import logger
from ..core.replay.deterministic import now, random, uuid4
from ..decorators import step, workflow
from . import workloads as base
from .workloads import Workload, _ok, _ran, sim_add, sim_fail


@step
def sim_keep(value: str) -> str:
    _ran("keep")
    return value


@workflow
def sim_values() -> str:
    taken = [str(uuid4()), repr(random()), now().isoformat()]
    logger.info("took %s", taken[0])
    echoed = [sim_keep(value) for value in taken]
    sleep(1.0)
    later = now()
    if echoed != taken:
        return f"replayed other values: {echoed} != {taken}"
    return "same" if later.isoformat() > taken[2] else f"time went back: {later} <= {taken[2]}"


@workflow
def sim_quorum(n: int) -> Any:
    done = parallel(*(sim_add.s(i, 500 + i) for i in range(n)), sim_fail.s(9), min_successful=2,
                    tolerated_failures=1)
    sleep(1.0)  # the result is read again on the replay after it
    again = parallel(sim_add.s(0, 600), min_successful=1)
    wrong = {i: v for i, v in done.results.items() if v != 500 + 2 * i}
    if wrong or len(done.succeeded) < 2 or not set(done.failed) <= {n} or again.values() != [600]:
        return {"wrong": wrong, "succeeded": done.succeeded, "failed": done.failed}
    return "quorum"


DETERMINISM: list[Workload] = [
    Workload("sim_values", lambda r, k: [], lambda a: _ok("same")),
    Workload("sim_quorum", lambda r, k: [r.randint(2, 4)], lambda a: _ok("quorum")),
]
base.CATALOGUE += DETERMINISM
