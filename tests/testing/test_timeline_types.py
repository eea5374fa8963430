"""The ``type`` names ``run.events()`` returns are the ones the guide's table lists ("The timeline")."""

from __future__ import annotations

import re
from pathlib import Path

from tests.testing import event_flows, kit_flows, update_flows
from workflows.core.model.states import EventStatus, OpKind
from workflows.testing import WorkflowEnv

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
CHILD_ENDS = ("completed", "failed", "cancelled", "timed_out")


def documented() -> set[str]:
    """The types the guide's timeline table names (``child_end_<status>`` expanded)."""
    section = GUIDE.read_text().split("### The timeline: `run.events()`", 1)[1].split("\n#", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    names = {name for row in rows for name in re.findall(r"`([a-z_<>]+)`", row)}
    ends = {"run_started", *(f"run_{s}" for s in ("completed", "failed", "cancelled", "timed_out", "continued"))}
    return {n.replace("<status>", s) for n in names for s in CHILD_ENDS} | ends


def test_every_op_kind_has_a_row_in_the_guide() -> None:
    types, statuses = documented(), {status.value for status in EventStatus}
    missing = [kind.value for kind in OpKind
               if not any(t.startswith(f"{kind}_") and t[len(kind) + 1:] in statuses for t in types)]
    assert not missing, f"kinds without a row in the guide's timeline table: {missing}"


def test_the_types_runs_return_are_documented(workflow_env: WorkflowEnv) -> None:
    env = workflow_env
    handles = [env.start(event_flows.order, 1), env.start(kit_flows.kit_fan, 2), env.start(kit_flows.kit_parent, [1]),
               env.start(kit_flows.kit_countdown, 1), env.start(kit_flows.kit_approval, "1h")]
    cart = env.start(update_flows.cart, 2)
    assert cart.update("add", "apple") == 1
    env.signal(cart, "checkout")
    waiting = env.start(kit_flows.kit_wait_forever)
    env.driver.settle()
    env.cancel(waiting)
    for handle in [*handles, cart]:
        env.run_until_complete(handle)
    env.run_until_idle()  # the cancelled run ends
    seen = {row["type"] for handle in [*handles, cart, waiting] for row in handle.events()}
    assert {"run_started", "event_set", "stream_appended", "step_completed", "sleep_fired", "parallel_completed",
            "child_started", "child_end_completed", "child_result_completed", "run_continued", "hook_created",
            "hook_wait_timed_out", "update_completed", "signal_received", "end_cancelled", "run_cancelled",
            "run_completed"} <= seen
    assert seen <= documented(), seen - documented()
