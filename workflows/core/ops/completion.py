"""Fan-outs with completion criteria: ``parallel(..., min_successful=N, tolerated_failures=K)``.

Such a fan-out completes as soon as N branches succeeded (without N: once every branch
ended), and fails as soon as more branches failed than it tolerates (K, and never more than
the width minus N, past which N successes cannot happen). Each branch, after recording its
result, adds its index to the join's tally (one conditional update of one item, returning
the sets of succeeded and failed branches after it); the branch whose tally meets a criterion
records the fan-out's outcome, naming the branches that counted. That write is conditional,
so one decision wins, and a replay reads the decision, never the branches: a branch that ends
after it is recorded in the join and ignored, and a branch not started by then is never run
(its message finds the run moved on). The result, :class:`FanOutResult`, says which counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection

from ...errors import FanOutFailed, InvalidArguments, StepFailed
from ..model.failures import parse
from ..model.records import Branch, BranchRecord, EventRecord, OpKind, event_seq
from ..model.states import EventStatus
from ..replay.commands import TallyBranch
from ..replay.commit import apply

if TYPE_CHECKING:
    from ...decorators import StepCall
    from ..engine import Engine
    from ..replay.context import WorkflowContext


@dataclass(frozen=True)
class Criteria:
    """When a fan-out of ``total`` branches is decided."""

    total: int
    min_successful: int | None = None
    tolerated_failures: int | None = None

    @classmethod
    def of(cls, total: int, min_successful: int | None, tolerated_failures: int | None,
           return_exceptions: bool = False) -> Criteria | None:
        """The criteria ``parallel`` was given (None without any), or InvalidArguments naming the bad one."""
        if min_successful is None and tolerated_failures is None:
            return None
        if return_exceptions:
            raise InvalidArguments("parallel: return_exceptions cannot be combined with min_successful or "
                                   "tolerated_failures (the result holds the failures that counted)")
        if min_successful is not None and (not isinstance(min_successful, int) or not 1 <= min_successful <= total):
            raise InvalidArguments(f"parallel: min_successful must be an int from 1 to the number of branches "
                                   f"({total}), got {min_successful!r}")
        if tolerated_failures is not None and (not isinstance(tolerated_failures, int) or tolerated_failures < 0):
            raise InvalidArguments(f"parallel: tolerated_failures must be an int of 0 or more, got "
                                   f"{tolerated_failures!r}")
        return cls(total, min_successful, tolerated_failures)

    @classmethod
    def of_branch(cls, branch: Branch) -> Criteria:
        """The criteria a branch message carries."""
        least, tolerated = branch.criteria or (None, None)
        return cls(branch.total, least, tolerated)

    @property
    def carried(self) -> tuple[int | None, int | None]:
        """What a branch message carries of the criteria."""
        return self.min_successful, self.tolerated_failures

    @property
    def allowed_failures(self) -> int:
        """How many branches may fail: K, and at most the width minus N."""
        limits = [self.tolerated_failures, None if self.min_successful is None else self.total - self.min_successful]
        return min(k for k in limits if k is not None)

    def decide(self, succeeded: Collection[int], failed: Collection[int]) -> str | None:
        """``"failed"``, ``"completed"``, or None while undecided."""
        if len(failed) > self.allowed_failures:
            return EventStatus.FAILED
        if self.min_successful is not None:
            return EventStatus.COMPLETED if len(succeeded) >= self.min_successful else None
        return EventStatus.COMPLETED if len(succeeded) + len(failed) >= self.total else None

    def outcome(self, run_id: str, pos: int, name: str, succeeded: Collection[int], failed: Collection[int],
                at: float) -> EventRecord | None:
        """The fan-out's outcome record if these branches decide it (it names them), else None."""
        status = self.decide(succeeded, failed)
        if status is None:
            return None
        data = json.dumps({"succeeded": sorted(succeeded), "failed": sorted(failed)})
        error = None if status == EventStatus.COMPLETED else (
            f"{len(failed)} of {self.total} branches failed, more than the {self.allowed_failures} tolerated")
        return EventRecord(run_id, event_seq(pos), OpKind.PARALLEL.value, status, at, name=name, data=data,
                           error=error)


@dataclass(frozen=True)
class FanOutResult:
    """What a fan-out with completion criteria returns: the branches that counted when it was decided.

    Attributes:
        results: the result of each branch that succeeded, by branch index.
        failures: a StepFailed for each branch that failed, by branch index.
        total: how many branches the fan-out had.
    """

    results: dict[int, Any]
    failures: dict[int, StepFailed]
    total: int

    @property
    def succeeded(self) -> list[int]:
        """Indexes of the branches that succeeded, in order."""
        return sorted(self.results)

    @property
    def failed(self) -> list[int]:
        """Indexes of the branches that failed, in order."""
        return sorted(self.failures)

    @property
    def unfinished(self) -> list[int]:
        """Indexes of the branches that did not count: still running (or not started) at the decision."""
        return [i for i in range(self.total) if i not in self.results and i not in self.failures]

    def values(self) -> list[Any]:
        """The results of the branches that succeeded, in branch order."""
        return [self.results[i] for i in self.succeeded]


def settled(engine: Engine, run_id: str, branch: Branch, name: str, failed: bool) -> EventRecord | None:
    """Tally a recorded branch (idempotently); the fan-out's outcome if this tally decides it."""
    succeeded_set, failed_set = apply(engine.store, TallyBranch(branch.join, branch.index, failed))
    return Criteria.of_branch(branch).outcome(run_id, branch.pos, name, succeeded_set, failed_set, engine.now())


def decided(engine: Engine, branch: Branch) -> bool:
    """Whether a fan-out with completion criteria is decided already by its tally (one read of the
    tally item, not of the run): its branches not started yet need not run."""
    succeeded, failed = engine.store.read_tally(branch.join)
    return Criteria.of_branch(branch).decide(succeeded, failed) is not None


def recovered(ctx: WorkflowContext, join: str, pos: int, name: str, criteria: Criteria,
              results: list[BranchRecord]) -> EventRecord | None:
    """Recovery of a dispatched fan-out: tally the recorded branches a dead worker left untallied (so the
    branches still to come see them), then its outcome if they decide it (recorded), else None."""
    succeeded: set[int] = set()
    failed: set[int] = set()
    for record in results:
        if record.index not in succeeded | failed:  # the first tally returns the sets: tally only the missing
            succeeded, failed = apply(ctx.store, TallyBranch(join, record.index, record.error is not None))
    outcome = criteria.outcome(ctx.run.run_id, pos, name, succeeded, failed, ctx.now())
    if outcome is None:
        return None
    return ctx.record(pos, OpKind.PARALLEL, outcome.status, name=name, data=outcome.data, error=outcome.error)


def result_of(ctx: WorkflowContext, join: str, event: EventRecord, calls: tuple[StepCall, ...]) -> FanOutResult:
    """The decided fan-out's result (or FanOutFailed): the branches its outcome names, read from the join."""
    info = json.loads(event.data or "{}")
    counted = set(info.get("succeeded", [])) | set(info.get("failed", []))
    records = {r.index: r for r in ctx.store.branch_results(join, len(calls)) if r.index in counted}
    results: dict[int, Any] = {}
    failures: dict[int, StepFailed] = {}
    for index in sorted(counted):
        record = records.get(index)
        step = calls[index].step.name if index < len(calls) else "?"
        if record is None or record.error is not None:
            failures[index] = StepFailed(step, record.error, failure=parse(record.data)) if record else \
                StepFailed(step, "its result is missing")
        else:
            results[index] = ctx.decode(record.data)
    if event.status == EventStatus.FAILED:
        raise FanOutFailed(f"parallel: {event.error}: " + "; ".join(
            f"branch {i} ({calls[i].step.name if i < len(calls) else '?'}): {f.error}" for i, f in failures.items()),
            {i: str(f.error) for i, f in failures.items()}, sorted(results))
    return FanOutResult(results, failures, len(calls))
