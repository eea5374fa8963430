"""The static checks CI relies on, run by the test command itself: ruff and mypy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def test_ruff_finds_nothing() -> None:
    out = subprocess.run([tool("ruff"), "check", "workflows", "persistence", "beat", "tests", "bench", "examples"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_mypy_finds_nothing() -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "workflows", "persistence", "beat"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
