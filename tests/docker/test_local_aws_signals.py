"""``workflows local-aws``, the main process of the compose stack's ``aws`` container, stops on SIGTERM.

``docker stop`` (and ``docker compose stop`` / ``down``) sends SIGTERM and, after the grace
period, SIGKILL. The emulator used to ignore SIGTERM and be killed after 10 s (exit 137). This
test needs no Docker: it sends SIGTERM to a real ``workflows local-aws`` process and sees it
stop serving and exit 0 at once. (As a container's PID 1 the kernel would ignore a signal left
at its default action; the compose test, ``test_compose_stack.py``, checks the container.)
"""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.waiting import wait_for
from workflows.local.server import free_port

pytestmark = pytest.mark.e2e  # starts a process

ROOT = Path(__file__).resolve().parents[2]


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_local_aws_stops_and_exits_0_on_sigterm_as_on_ctrl_c(signum: int, tmp_path: Path) -> None:
    pytest.importorskip("moto")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "local-aws.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "workflows", "local-aws", "--port", str(port)], cwd=ROOT,
                                   stdout=out, stderr=subprocess.STDOUT)
    try:
        # Serving: it printed what to export (after the server answered).
        wait_for(lambda: "local AWS at" in log.read_text() or process.poll() is not None, timeout=60, poll=0.1,
                 what="local-aws printing its address")
        assert process.poll() is None and _answers(url), log.read_text()
        process.send_signal(signum)
        process.wait(timeout=60)  # a bound that only catches a hang: one that ignores the signal never exits
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = log.read_text()
    assert process.returncode == 0, output
    assert f"local AWS at http://127.0.0.1:{port}" in output and output.endswith("local AWS stopped\n"), output
    assert "Traceback" not in output, output
    assert not _answers(url)
