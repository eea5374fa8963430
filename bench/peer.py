"""The bench's own virtualenv: pyworkflow-engine 0.4.0 (the peer) and py-spy, never project dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PEER = "pyworkflow-engine[dynamodb]==0.4.0"
EXTRAS = ("kombu[sqs]", "pycurl", "boto3", "py-spy")
ENV_DIR = Path(__file__).resolve().parent / ".venv"


def bench_python(log: object = print) -> Path:
    """Return the Python of the bench's virtualenv, creating it on first use (``python -m venv`` + pip).

    Raises:
        RuntimeError: the virtualenv or an install failed; the message holds pip's last lines.
    """
    python = ENV_DIR / "bin" / "python"
    marker = ENV_DIR / ".installed"
    wanted = " ".join((PEER, *EXTRAS))
    if marker.exists() and marker.read_text() == wanted:
        return python
    log(f"creating the bench virtualenv in {ENV_DIR.name}/ ({wanted}) ...")  # type: ignore[operator]
    steps = [[sys.executable, "-m", "venv", str(ENV_DIR)],
             [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", PEER, *EXTRAS]]
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise RuntimeError(f"`{' '.join(argv[-4:])}` exited {done.returncode}: {' / '.join(tail)}")
    marker.write_text(wanted)
    return python


def py_spy() -> Path:
    """The py-spy binary of the bench's virtualenv."""
    return ENV_DIR / "bin" / "py-spy"
