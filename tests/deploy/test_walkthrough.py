"""docs/aws.md's walkthrough, run line by line against the moto server standing in for AWS.

The lines between the ``walkthrough`` markers are the commands a user types: the test runs
exactly those (through bash), with only the endpoint and credentials of the local server added
to the environment, and waits for the last one to show the run completed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import stop

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = re.compile(r"^(?:export )?([A-Z_]+)=(.*)$")


def walkthrough_lines() -> list[str]:
    text = (ROOT / "docs" / "aws.md").read_text()
    block = text.split("<!-- walkthrough:start -->", 1)[1].split("<!-- walkthrough:end -->", 1)[0]
    code = block.split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in code.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_the_documented_commands_take_a_user_from_nothing_to_a_completed_run(
        aws_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lines = walkthrough_lines()
    assert lines[-1].startswith("workflows runs show") and any("aws deploy" in line for line in lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKFLOWS_")}
    env.update({k: aws_env[k] for k in aws_env if k.startswith("AWS_")})  # the local server, not AWS
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)  # the example workflows, as a user's own package would be installed
    background: list[subprocess.Popen[bytes]] = []
    logs = []

    def bash(line: str) -> str:
        done = subprocess.run(["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    try:
        for line in lines[:-1]:
            assignment = ASSIGNMENT.match(line)
            if assignment:
                name, value = assignment.groups()
                env[name] = bash(f"printf %s {value}")
            elif line.endswith("&"):
                log = tmp_path / f"process-{len(background)}.log"
                logs.append(log)
                with open(log, "wb") as out:
                    background.append(subprocess.Popen(["bash", "-c", "exec " + line[:-1]], env=env, cwd=tmp_path,
                                                       stdout=out, stderr=subprocess.STDOUT))
            else:
                bash(line)
        assert env["RUN_ID"], "the run id was not printed"
        deadline, shown = time.monotonic() + 120, ""
        while time.monotonic() < deadline:
            shown = bash(lines[-1])
            if re.search(r"^status\s+(completed|failed|cancelled|timed_out)", shown, re.MULTILINE):
                break
            time.sleep(1)  # polls the walkthrough's own status command (the loop is the condition)
        assert re.search(r"^status\s+completed$", shown, re.MULTILINE), \
            shown + "".join(log.read_text(errors="replace")[-3000:] for log in logs)
        assert "shipped o-1 from east, west" in shown
    finally:
        stop(background)


