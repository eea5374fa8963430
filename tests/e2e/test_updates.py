"""Updates on real worker processes: clients send updates into a run while a step runs and while it
waits, concurrently and retried with the same id; a validator refuses; a run that ended answers
with UpdateRunEnded."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e import update_flows as flows
from workflows import UpdateRefused, UpdateRunEnded, send_signal, update_run
from workflows.cli.commands import main

pytestmark = pytest.mark.e2e


def test_clients_update_a_running_cart_exactly_once(cluster, capsys) -> None:  # type: ignore[no-untyped-def]
    run = flows.cart.start(3)
    # Sent while the dispatched step runs: answered once the step is done and the run reaches its wait.
    assert run.update("add", "apple", update_id="first", timeout=60) == 1
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda item: update_run(run.run_id, "add", item, timeout=60), ["b", "cc", "ddd"]))
    assert sorted(answers) == [2, 3, 4]
    assert run.update("add", "apple", update_id="first", timeout=60) == 1  # a retry: the same answer, not run again
    with pytest.raises(UpdateRefused, match="non-empty string"):
        run.update("add", "", timeout=60)
    capsys.readouterr()
    assert main(["runs", "update", run.run_id, "add", "--payload", '"eeeee"', "--id", "cli", "--timeout", "60"]) == 0
    assert capsys.readouterr().out == "5\n"
    send_signal(run.run_id, "checkout")
    result = run.result(timeout=60)
    assert result["items"][0] == "apple" and sorted(result["items"]) == ["apple", "b", "cc", "ddd", "eeeee"]
    assert result["total"] == 5 + 1 + 2 + 3 + 5
    with pytest.raises(UpdateRunEnded):
        run.update("add", "late", timeout=10)
