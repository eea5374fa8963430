"""When each Celery task finished, read from the workers' logs ("Task name[id] succeeded in ...").

A task that ran a step records the step's outcome before it returns, so a second copy of its
message whose body started after the first copy's task succeeded met a recorded step. Log times
are the worker's clock: a skewed worker's lines are corrected by its skew.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict

from .fleet import Member

SUCCEEDED = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}): \w+/[\w-]+\] Task \S+\[([0-9a-f-]+)\] succeeded")


def task_ends(members: list[Member]) -> dict[str, list[float]]:
    """Task id -> the true times at which a worker logged it succeeded."""
    ends: dict[str, list[float]] = defaultdict(list)
    for member in members:
        if not member.role.startswith("worker"):
            continue
        for line in member.output().splitlines():
            match = SUCCEEDED.match(line)
            if match:
                stamp, millis, task = match.groups()
                at = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000
                ends[task].append(at - member.skew)
    return ends
