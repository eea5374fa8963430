"""Replay testing: runs exported with ``workflows runs export`` replay clean against unchanged
code, and a changed workflow fails with NonDeterminismError naming the position and what
differs. Runs are recorded with the kit; the exporter reads them through the Store port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.testing import kit_flows as flows
from workflows import NonDeterminismError, sleep, workflow
from workflows.cli.commands import main
from workflows.errors import InvalidExport
from workflows.export import export_run
from workflows.testing import WorkflowEnv, redefinable, replay
from workflows.testing.hooks import hook_token


def recorded(workflow_: Any, *args: Any, finish: bool = True) -> dict[str, Any]:
    """Run a workflow in a fresh env (to its end, or until it first waits) and export it."""
    with WorkflowEnv() as env:
        run = env.start(workflow_, *args)
        if finish:
            run.result()
        else:
            env.driver.settle()
        return export_run(env.store, run.run_id)


@pytest.mark.parametrize(("workflow_", "args"), [
    (flows.kit_long_sleep, (3,)), (flows.kit_fan, (4,)), (flows.kit_parent, ([1, 2],)),
    (flows.kit_countdown, (0,)), (flows.kit_countdown, (2,)), (flows.kit_approval, ("1h",)),
], ids=["sleep", "fan-out", "children", "returns", "continues", "hook"])
def test_unchanged_code_replays_clean_and_runs_no_step(workflow_: Any, args: tuple[Any, ...]) -> None:
    export = recorded(workflow_, *args)
    before = dict(flows.CALLS)
    report = replay(export)
    assert report.run_id == export["run"]["run_id"] and report.ops > 0
    assert report.ending in ("returned", "continued")
    assert flows.CALLS == before  # no step body ran


def test_a_live_run_replays_up_to_the_op_it_waits_on() -> None:
    export = recorded(flows.kit_long_sleep, 30, finish=False)
    assert export["run"]["status"] == "suspended"
    assert replay(export).ending == "waits at op 1 (sleep)"


def test_an_op_added_before_a_recorded_one_is_non_determinism() -> None:
    export = recorded(flows.kit_long_sleep, 3)
    with redefinable():
        @workflow(name="kit_long_sleep")
        def changed(days: int) -> str:
            flows.kit_note("before")
            flows.kit_note("a new step")
            sleep(f"{days}d")
            return flows.kit_note("after")

        with pytest.raises(NonDeterminismError) as caught:
            replay(export)
    error = caught.value
    assert (error.position, error.recorded, error.found) == (1, "sleep", "step kit_note")
    assert replay(export).ending == "returned"  # the first definition is back after the block


def test_a_step_removed_from_a_waiting_run_is_non_determinism() -> None:
    export = recorded(flows.kit_long_sleep, 30, finish=False)
    with redefinable():
        @workflow(name="kit_long_sleep")
        def changed(days: int) -> str:
            flows.kit_note("before")
            return flows.kit_note("after")  # the sleep is gone

        with pytest.raises(NonDeterminismError) as caught:
            replay(export)
    assert (caught.value.position, caught.value.recorded, caught.value.found) == (1, "sleep", "step kit_note")


def test_a_step_added_after_the_end_is_non_determinism() -> None:
    export = recorded(flows.kit_fan, 2)
    with redefinable():
        @workflow(name="kit_fan")
        def changed(n: int) -> list[int]:
            results = flows.parallel(*(flows.kit_square.s(i) for i in range(n)))
            flows.kit_note("audit")
            return results

        with pytest.raises(NonDeterminismError, match="position 1") as caught:
            replay(export)
    assert caught.value.found == "step 'kit_note'" and "end" in caught.value.recorded


def test_an_op_dropped_from_the_end_is_non_determinism() -> None:
    export = recorded(flows.kit_long_sleep, 1)
    with redefinable():
        @workflow(name="kit_long_sleep")
        def changed(days: int) -> str:
            flows.kit_note("before")
            sleep(f"{days}d")
            return "done early"

        with pytest.raises(NonDeterminismError) as caught:
            replay(export)
    assert (caught.value.position, caught.value.recorded) == (2, "step kit_note")


def test_an_export_holds_no_hook_token() -> None:
    with WorkflowEnv() as env:
        run = env.start(flows.kit_approval, "1h")
        env.driver.settle()
        token = hook_token(env.engine, run.run_id, "approve")
        text = json.dumps(export_run(env.store, run.run_id))
    assert token not in text and "wh_" not in text


def test_the_cli_exports_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.json"
    with WorkflowEnv() as env:
        run = env.start(flows.kit_fan, 3)
        run.result()
        assert main(["runs", "export", run.run_id, "-o", str(path)]) == 0
    assert main(["replay", str(path)]) == 0
    assert f"ok    {path}: run {run.run_id} (kit_fan, completed): 1 op(s) replayed, returned" in capsys.readouterr().out
    with redefinable():
        @workflow(name="kit_fan")
        def changed(n: int) -> int:
            return flows.kit_square(n)

        assert main(["replay", str(path)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_a_file_that_is_not_an_export_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"format": "something else"}')
    with pytest.raises(InvalidExport, match="not a run export"):
        replay(path)
    with pytest.raises(InvalidExport, match="cannot read"):
        replay(tmp_path / "missing.json")
