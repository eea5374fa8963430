"""A short chaos soak (docs/soak.md): real workers, beat and the hook endpoint behind the fault front,
workers and beat killed and restarted, then the ledger's check. It must pass, and it must have
injected every kind of fault and killed every role, so that it cannot pass by doing nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ["--seed", "7", "--duration", "100", "--kill-every", "8", "--wave-every", "8", "--fan-out", "60"]


def pairs(text: str) -> dict[str, int]:
    """The ``name N`` pairs of a report line."""
    return {name: int(n) for name, n in re.findall(r"([\w-]+) (\d+)", text)}


def line_after(report: str, heading: str, offset: int = 0) -> str:
    """The report's line ``offset`` lines after the one that starts with ``heading``."""
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(heading):
            return lines[i + offset]
    raise AssertionError(f"no {heading!r} in the report:\n{report}")


@pytest.mark.timeout(280)
def test_a_short_soak_passes_having_injected_every_fault_and_killed_every_role() -> None:
    pytest.importorskip("moto", reason="SKIPPED LOUDLY: the soak needs moto[server] (pip install -e '.[dev]')")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORKFLOWS_"))}
    done = subprocess.run([sys.executable, "-m", "workflows.soak", *COMMAND], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=270)
    report = done.stdout
    assert done.returncode == 0, report[-6000:] + done.stderr[-3000:]
    assert "PASSED" in report and "violations: 0" in report
    faults = pairs(line_after(report, "faults injected", 1))
    assert all(faults.get(kind, 0) > 0 for kind in ("lose", "throttle", "error", "reset", "latency")), faults
    kills = pairs(line_after(report, "kills by role:").removeprefix("kills by role:"))
    assert all(kills.get(role, 0) >= 1 for role in ("worker-threads", "worker-prefork", "beat")), kills
    assert pairs(line_after(report, "  order ")).get("completed", 0) >= 3, report
