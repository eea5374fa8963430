"""Every write a replay causes goes through the committer (issue 41, item 1; docs/architecture.md,
"Commands and the committer"): a durable call builds a typed command (``core/replay/commands.py``) and
``core/replay/commit.py`` alone turns it into Store calls. This test is a ratchet: the modules below
that still call a Store write themselves are listed with the writes they make, and the list may only
shrink; a module or a write that is not listed fails the test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

#: The Store port's writes (``core/storage/ports.py``): every method that changes an item.
WRITES = frozenset("""
acquire_slot advance_batch advance_chain advance_run answer_update buffer_fire claim_batch claim_fire
claim_recovery claim_run claim_timer close_hooks complete_hook continue_run copy_blob copy_history
create_batch create_hook create_run create_schedule dead_letter defer_run delete_blob delete_schedule
delete_signals delete_timer end_batch end_session enqueue_waiter expire_hook finish_fire finish_run
join_branch keep_run_alive mark_ended pass_slot pause_schedule promote_buffered push_debounce put_blob
put_signal put_timer put_update recheck_schedule record_attempt record_branch record_event
record_event_while_live refuse_update release_fire release_slot renew_claim renew_lease renew_slot
retain_run schedule_retry set_event set_tags settle_join skip_fire stall_batch suspend_run
tag_ended_run take_recovery take_token tally_branch unpause_schedule update_schedule wake_run
write_stream
""".split())
#: The rooms a replay runs in (background processes and the engine's own ends come later).
REPLAY_ROOMS = ("replay", "ops", "execution", "admission")
COMMITTER = "workflows/core/replay/commit.py"
#: Writes not yet made commands, by module: this may only shrink (issue 41, item 1 goes on).
NOT_YET = {
    "workflows/core/admission/debounce.py": {"defer_run", "release_slot"},
    "workflows/core/admission/deferral.py": {"defer_run"},
    "workflows/core/admission/delayed.py": {"defer_run"},
    "workflows/core/admission/workflow_slots.py": {"acquire_slot", "defer_run", "enqueue_waiter", "pass_slot",
                                                 "release_slot"},
    "workflows/core/execution/flow.py": {"acquire_slot", "release_slot", "renew_slot", "schedule_retry",
                                         "take_token"},
}


def store_writes(path: Path) -> set[str]:
    """The Store writes ``path`` calls on something named like a store (``store``, ``ctx.store``...)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES \
                and "store" in ast.unparse(node.func.value):
            found.add(node.func.attr)
    return found


def replay_modules() -> list[Path]:
    return [p for room in REPLAY_ROOMS for p in sorted((ROOT / "workflows" / "core" / room).rglob("*.py"))]


def test_only_the_committer_and_the_listed_modules_write() -> None:
    found = {p.relative_to(ROOT).as_posix(): store_writes(p) for p in replay_modules()}
    found = {module: writes for module, writes in found.items() if writes and module != COMMITTER}
    new = {m: sorted(w - NOT_YET.get(m, set())) for m, w in found.items() if w - NOT_YET.get(m, set())}
    assert new == {}, "make these writes commands that core/replay/commit.py commits"


def test_the_list_only_shrinks() -> None:
    found = {p.relative_to(ROOT).as_posix(): store_writes(p) for p in replay_modules()}
    stale = {m: sorted(w - found.get(m, set())) for m, w in NOT_YET.items() if w - found.get(m, set())}
    assert stale == {}, "these writes are commands now: take them off NOT_YET"


def test_the_committer_writes() -> None:
    assert {"suspend_run", "set_event", "write_stream", "create_hook", "answer_update", "refuse_update",
            "delete_signals", "expire_hook", "advance_run", "settle_join", "join_branch", "tally_branch",
            "wake_run", "claim_run", "renew_lease", "record_attempt",
            "schedule_retry"} <= store_writes(ROOT / COMMITTER)


def test_the_ops_and_replay_rooms_write_nothing_themselves() -> None:
    rooms = [p for p in replay_modules() if "/ops/" in p.as_posix() or "/replay/" in p.as_posix()]
    assert rooms and all(store_writes(p) == set() for p in rooms if p.relative_to(ROOT).as_posix() != COMMITTER)
