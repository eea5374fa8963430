"""Client side of the compose stack's test, run in the stack's ``cli`` container.

``docker compose run --rm --entrypoint python cli -m dockertests.stack_probe COMMAND ...`` prints
one JSON document: ``wait RUN_ID`` the run's outcome once it ended, ``link RUN_ID`` the approval
link the approval example's notify step returned, ``burst N SECONDS`` the results of N runs of
``burst_run`` started at once.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

TIMEOUT = 300.0


def wait(run_id: str) -> dict[str, Any]:
    from workflows.client import get_run

    run = get_run(run_id)
    result = run.result(timeout=TIMEOUT)
    return {"status": str(run.status().value), "result": result}


def link(run_id: str) -> str:
    from workflows.client import get_run

    run = get_run(run_id)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        for row in run.steps():
            if row["name"] == "notify_approver" and row["status"] == "completed":
                return str(row["result"]["link"])
        time.sleep(0.5)
    raise SystemExit(f"no approval link in {TIMEOUT:g} s")


def burst(count: int, seconds: float) -> list[Any]:
    from dockertests.stack_flows import burst_run

    runs = [burst_run.start(i, seconds) for i in range(count)]
    return [run.result(timeout=TIMEOUT) for run in runs]


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "wait":
        print(json.dumps(wait(args[0])))
    elif command == "link":
        print(json.dumps(link(args[0])))
    elif command == "burst":
        print(json.dumps(burst(int(args[0]), float(args[1]))))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
