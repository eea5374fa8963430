"""`python -m workflows hooks resume` as a subprocess, against real worker and beat processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e import hook_flows
from workflows.core.model.tokens import new_token

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def resume_cli(token: str, data: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with this process's environment (the session fixtures have set it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workflows", "hooks", "resume", token, "--data", data],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_cli_resume_reuse_unknown_and_bad_json(cluster) -> None:  # type: ignore[no-untyped-def]
    run = hook_flows.approval.start()
    token = hook_flows.published_token(run)

    bad = resume_cli(token, "{not json")
    assert bad.returncode == 2, bad.stderr
    assert "not valid JSON" in bad.stderr

    ok = resume_cli(token, '{"approved": true, "by": "cli"}')
    assert ok.returncode == 0, ok.stderr
    assert run.run_id in ok.stdout
    assert run.result(timeout=30) == {"approved": True, "by": "cli"}

    again = resume_cli(token, '{"approved": false}')
    assert again.returncode == 1
    assert "HookAlreadyResumed" in again.stderr

    unknown = resume_cli(new_token(), "null")
    assert unknown.returncode == 1
    assert "HookNotFound" in unknown.stderr

    for result in (bad, ok, again):
        assert token not in result.stdout + result.stderr
