"""A batch that cannot proceed says so: a chunk that fails for the store (an access denied, a missing
table) is recorded on the batch with its error and tried again later, twice as late each time; after
``MAX_STALLS`` in a row the batch ends ``failed`` with the error, which ``batch show`` prints. A
throttle is only tried again (before, such a batch stayed ``running`` for ever, its error in beat's log)."""

from __future__ import annotations

from typing import Any

from tests.testing import batch_flows as flows
from workflows import RunFilter, batch_rerun, get_batch
from workflows.cli.commands import main
from workflows.core.model.batches import INDEX_SETTLE_SECONDS, MAX_STALLS
from workflows.core.model.states import BatchState
from workflows.errors import StorageError, Throttled
from workflows.testing import WorkflowEnv


def _failed_runs(env: WorkflowEnv, n: int) -> None:
    for i in range(n):
        env.start(flows.batch_failing, i)
    env.run_until_idle()


def test_a_batch_whose_chunks_are_denied_ends_failed_with_the_error(workflow_env: WorkflowEnv, monkeypatch,  # type: ignore[no-untyped-def]
                                                                    capsys) -> None:
    _failed_runs(workflow_env, 2)
    batch_id = batch_rerun(RunFilter(status="failed"))

    def denied(*args: Any, **kwargs: Any) -> None:
        raise StorageError("copy history failed: AccessDeniedException")

    monkeypatch.setattr(workflow_env.store, "copy_history", denied)
    workflow_env.clock.advance(INDEX_SETTLE_SECONDS)
    workflow_env.driver.tick()
    stalled = get_batch(batch_id)
    assert (stalled.state, stalled.stalls) == (BatchState.RUNNING, 1)
    assert "AccessDeniedException" in (stalled.stalled or "")
    assert main(["batch", "show", batch_id]) == 0
    assert "error      StorageError: copy history failed: AccessDeniedException (1 chunk(s) in a row" \
        in capsys.readouterr().out
    for _ in range(MAX_STALLS):
        workflow_env.clock.advance(workflow_env.settings.lease_seconds * 2 ** MAX_STALLS)
        workflow_env.driver.tick()
    ended = get_batch(batch_id)
    assert (ended.state, ended.stalls, ended.done) == (BatchState.FAILED, MAX_STALLS, 0)
    assert main(["batch", "show", batch_id]) == 0
    out = capsys.readouterr().out
    assert "state      failed" in out and "error      StorageError: copy history failed" in out


def test_a_throttled_chunk_is_only_tried_again(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _failed_runs(workflow_env, 1)
    batch_id = batch_rerun(RunFilter(status="failed"))
    real = workflow_env.store.copy_history
    throttles = [MAX_STALLS + 2]

    def throttled(*args: Any, **kwargs: Any) -> Any:
        if throttles[0]:
            throttles[0] -= 1
            raise Throttled("copy history: DynamoDB kept throttling")
        return real(*args, **kwargs)

    monkeypatch.setattr(workflow_env.store, "copy_history", throttled)
    for _ in range(MAX_STALLS + 3):
        workflow_env.clock.advance(workflow_env.settings.lease_seconds * 2)
        workflow_env.driver.tick()
    batch = get_batch(batch_id)
    assert (batch.state, batch.stalls, batch.done) == ("completed", 0, 1)
