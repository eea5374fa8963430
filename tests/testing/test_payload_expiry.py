"""Payload objects of live runs never expire, and forks never reuse an older fork's history
(issue 23, items 2 and 5), in the testing kit's deleting world (TTL and the bucket's lifecycle
rule delete at their earliest as the virtual clock moves)."""

from __future__ import annotations

import secrets

import pytest

from tests.testing import payload_expiry_flows as flows
from workflows.core.storage.payloads import Payloads, reference_of
from workflows.errors import RunFailed
from workflows.forking import fork_run
from workflows.settings import Settings
from workflows.testing import WorkflowEnv

BLOB = "x" * 3000  # over the threshold below: kept in the (memory) payload bucket
#: As docs/payloads.md had it: objects expire 90 days after their last write; runs are kept 30 days.
SETTINGS = Settings(payload_threshold_bytes=1024, max_payload_bytes=1024 * 1024, payload_expiry_days=90,
                    retention=30 * 86400.0, hook_secret=secrets.token_urlsafe(32))


@pytest.fixture
def env() -> WorkflowEnv:
    flows.CALLS.clear()
    with WorkflowEnv(settings=SETTINGS) as kit:
        yield kit


def cold_cache(env: WorkflowEnv) -> None:
    """Make the env's engine a fresh worker: nothing read or written before is cached."""
    env.engine.payloads = Payloads(env.engine.payloads.blobs, SETTINGS)


def objects(env: WorkflowEnv, run_id: str) -> list[str]:
    return sorted(key for key in env.store.blob_objects.objects if f"/{run_id}/" in key)


def test_a_fork_of_an_old_run_copies_the_objects_it_needs(env: WorkflowEnv) -> None:
    source = env.start(flows.expiry_grow_then_sleep, BLOB, 60)
    assert source.result() == 9000  # day 60
    env.advance("19d")  # day 79: the source's objects were written at day 0
    fork = fork_run(source.run_id, 1)  # copies the step's large result; sleeps 60 days again
    env.advance("59d")
    cold_cache(env)  # the fork's last resume (day 139) runs in another worker
    assert env.run_until_complete(fork) == 9000
    ref = reference_of(fork.record().args)
    assert ref is not None and ref.key.startswith(f"payloads/{fork.run_id}/")


def test_a_successor_with_the_same_large_arguments_writes_its_own_object(env: WorkflowEnv) -> None:
    first = env.start(flows.expiry_sleepy_chain, BLOB)
    env.advance("49d")
    cold_cache(env)  # the worker that continues the run at day 50 has never written the object
    env.advance("2d")
    successor = first.record().continued_to  # (the first run's items expire at day 80)
    assert successor is not None
    env.advance("48d")
    cold_cache(env)  # the successor's resume at day 100 runs in another worker
    assert env.run_until_complete(successor) == 3000


def test_a_fork_retried_after_its_guard_expired_runs_again(env: WorkflowEnv) -> None:
    source = env.start(flows.expiry_grow_then_sleep, BLOB, 1)
    assert source.result() == 9000 and flows.CALLS["expiry_grow"] == 1
    old = fork_run(source.run_id, 0, idempotency_key="fork-k")
    assert env.run_until_complete(old) == 9000 and flows.CALLS["expiry_grow"] == 2
    assert fork_run(source.run_id, 0, idempotency_key="fork-k") == old  # the guard decides
    env.advance("2d")  # the retention sweep stamped the old fork's items
    # TTL deletes late and in any order: the guard and the run item go, the history items stay.
    env.store.guards.items.pop(("fork-k",))
    env.store.runs.items.pop((old.run_id,))
    new = fork_run(source.run_id, 0, idempotency_key="fork-k")
    assert new.run_id != old.run_id
    assert env.run_until_complete(new) == 9000 and flows.CALLS["expiry_grow"] == 3  # its step ran again
    history = [item for (run_id, _), item in env.store.events.items.items() if run_id == new.run_id]
    renewed = env.clock.now() + env.settings.retention  # type: ignore[operator]
    assert history and all(item["retain_until"] >= renewed for item in history)  # its own expiry, not the old TTL


def test_a_parent_keeps_its_childs_large_result(env: WorkflowEnv) -> None:
    parent = env.start(flows.expiry_parent_of_grower, BLOB)
    env.advance("100d")  # the child ended at day 1, its objects written at day 0
    cold_cache(env)  # the parent's last resume (day 101) runs in another worker
    assert env.run_until_complete(parent) == 9000


def test_a_missing_object_fails_the_run_naming_it(env: WorkflowEnv) -> None:
    run = env.start(flows.expiry_grow_then_sleep, BLOB, 5)
    env.advance("1d")
    key = reference_of(run.record().args).key
    env.store.blob_objects.delete_blob(key)  # deleted by hand (or a misconfigured rule)
    cold_cache(env)
    with pytest.raises(RunFailed) as failed:
        env.run_until_complete(run)
    assert "PayloadUnavailable" in str(failed.value) and key in str(failed.value)
    assert "recovery attempts exhausted" not in str(failed.value)


def test_objects_of_live_runs_never_expire_and_ended_ones_go_with_their_items(env: WorkflowEnv) -> None:
    live = env.start(flows.expiry_grow_then_sleep, BLOB, 400)
    done = env.start(flows.expiry_grow_then_sleep, BLOB, 1)
    assert done.result() == 9000
    env.advance("1d")  # the kit's retention sweep marked the ended run's objects on the way
    marked = env.store.blob_objects.written_at
    keys = objects(env, done.run_id)
    assert len(keys) == 3 and all(k in env.store.blob_objects.ended for k in keys)
    expires = max(marked[k] for k in keys) + 90 * 86400
    env.advance(expires - env.clock.now() - 3600)
    assert objects(env, done.run_id) == keys and env.store.runs.get(done.run_id) is None  # items first
    env.advance("1h")
    assert objects(env, done.run_id) == []
    assert len(objects(env, live.run_id)) == 3  # its arguments, its step's arguments and result, months old
    assert env.run_until_complete(live) == 9000


def test_orphan_prefixes_are_listed_and_deleted_by_the_operator(env: WorkflowEnv, capsys) -> None:  # type: ignore[no-untyped-def]
    from workflows.cli.commands import main

    ghost = "0b5e7a3c-0000-4000-8000-000000000000"  # a start that died between its object and its run
    env.store.blob_objects.put_blob(f"payloads/{ghost}/{'a' * 64}", b'"lost"')
    live = env.start(flows.expiry_grow_then_sleep, BLOB, 400)
    new_ghost = f"payloads/{ghost}x/{'b' * 64}"
    env.advance("2d")
    env.store.blob_objects.put_blob(new_ghost, b'"being created"')  # within the grace period: not listed
    assert main(["payloads", "orphans"]) == 0
    out = capsys.readouterr().out
    assert f"payloads/{ghost}/  1 object(s)" in out and f"{ghost}x" not in out and live.run_id not in out
    assert main(["payloads", "orphans", "--delete"]) == 0
    assert "deleted 1 object(s)" in capsys.readouterr().out
    assert objects(env, ghost) == [] and len(objects(env, live.run_id)) == 3
    assert env.store.blob_objects.get_blob(new_ghost) is not None


def test_a_childs_result_copied_for_a_parent_that_ended_is_marked_ended(env: WorkflowEnv) -> None:
    parent = env.start(flows.expiry_leaves_a_grower, BLOB)
    child = env.run_until_complete(parent)
    env.advance("2d")  # the retention sweep marked the parent's objects (its arguments)
    assert objects(env, parent.run_id) and set(objects(env, parent.run_id)) <= env.store.blob_objects.ended
    assert env.run_until_complete(child) == BLOB * 2  # day 10: its large result is copied for the parent first
    # The parent had ended, so nothing records or reads the copy: it must expire like the rest of
    # the parent's objects, not stay unmarked (and kept) for ever.
    assert set(objects(env, parent.run_id)) <= env.store.blob_objects.ended
    env.advance("200d")
    assert objects(env, parent.run_id) == []
