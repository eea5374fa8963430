"""Fork a run at an op position, or rerun a failed run from its failed step (docs/versioning.md)."""

from __future__ import annotations

from .client import RunHandle, _check_text
from .core.background import forks
from .runtime import get_engine


def fork_run(run_id: str, at: int, *, idempotency_key: str | None = None) -> RunHandle:
    """Start a new run of ``run_id``'s workflow with its arguments, reusing its recorded
    outcomes below op position ``at``; ops from ``at`` on run again. The new run records
    ``forked_from`` and ``forked_at``. The same ``idempotency_key`` always names one fork.

    Raises:
        RunNotFound: no run has this id.
        ForkRefused: ``at`` lies past the first op without an outcome, or an op below it (a
            hook, a fan-out, a child that has not ended) cannot be copied.
        UnknownWorkflow: the run's workflow is not registered in this process.
    """
    if idempotency_key is not None:
        _check_text(idempotency_key, "idempotency_key")
    return RunHandle(forks.fork_run(get_engine(), _check_text(run_id, "run_id"), at,
                                    idempotency_key=idempotency_key))


def rerun(run_id: str, *, idempotency_key: str | None = None) -> RunHandle:
    """Fork a failed run at its failed step (its last failed step or fan-out; else where its
    workflow code failed, after its last op); see :func:`fork_run`.

    Raises:
        RunNotFound: no run has this id.
        ForkRefused: the run has not failed, or its history before the failed step cannot be copied.
    """
    if idempotency_key is not None:
        _check_text(idempotency_key, "idempotency_key")
    return RunHandle(forks.rerun(get_engine(), _check_text(run_id, "run_id"), idempotency_key=idempotency_key))
