"""Every runnable example and the demo run end to end on their embedded stack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = {
    ("examples.order",): "shipped o-7 from east, west",
    ("examples.signals",): "'cents': 2100",
    ("examples.children",): "paginate: 435 runs in chain: 4",
    ("examples.updates",): "refused: unknown sku 'pot'",
    ("workflows", "demo", "--sleep", "1"): "result: {'receipt': 'rcpt-o-1-1999'",
}


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_example_runs(module: tuple[str, ...], aws_env) -> None:  # type: ignore[no-untyped-def]
    out = subprocess.run([sys.executable, "-m", *module], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    assert EXPECTED[module] in out.stdout
