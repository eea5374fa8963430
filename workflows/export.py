"""A run and everything a replay of it reads, as JSON data (``workflows runs export``).

An export holds the run record, its whole history (outcomes, failed attempts, the end
record) and the recorded branches of its fan-outs. It holds the run's payloads
(arguments, results, signal and hook payloads) inline, a large one read from the payload
bucket (so an export replays without access to it), but never a hook token: a hook record
keeps only a nonce and the token's hash, and a token found in an older record is dropped.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core.model.join_layout import fan_out_width_at
from .core.model.records import BranchRecord, EventRecord, OpKind, RunRecord, with_last_outcome
from .core.ops.fanout import join_id
from .core.storage.payloads import Payloads
from .core.storage.ports import Store
from .errors import InvalidExport

FORMAT = "celery-durable-workflows/run-export"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class RunExport:
    """A run as exported: its record, its history in order, and its fan-outs' branches by join id."""

    run: RunRecord
    history: list[EventRecord]
    branches: dict[str, list[BranchRecord]]


def export_run(store: Store, run_id: str, payloads: Payloads | None = None) -> dict[str, Any]:
    """The export of a run, read through the Store port (GetItem and Queries only); with
    ``payloads``, every reference to a large payload is replaced by the payload itself.

    Raises:
        RunNotFound: no run has this id.
    """
    run = store.get_run(run_id)
    history = [_without_token(e) for e in with_last_outcome(run, store.read_history(run_id))]
    fan_outs = {e.pos for e in history if e.kind == OpKind.PARALLEL and e.is_outcome}
    if run.waiting and run.waiting.get("kind") == OpKind.PARALLEL.value:
        fan_outs.add(run.cursor)  # a fan-out in flight: its branches recorded so far
    names = {e.pos: e.name for e in history if e.kind == OpKind.PARALLEL and e.is_outcome}
    branches = {join_id(run_id, pos): store.branch_results(join_id(run_id, pos),
                                                           fan_out_width_at(pos, names, run.waiting))
                for pos in sorted(fan_outs)}
    if payloads is not None:
        show = payloads.resolve_record
        run = dataclasses.replace(run, args=show(run.args) or run.args, result=show(run.result))
        history = [dataclasses.replace(e, data=show(e.data)) for e in history]
        branches = {j: [dataclasses.replace(b, data=show(b.data)) for b in found] for j, found in branches.items()}
    # the outcome the end carries is in ``history``; a creation's request id is no part of the run's data
    fields = {k: v for k, v in dataclasses.asdict(run).items() if k not in ("req", "last_outcome")}
    return {"format": FORMAT, "version": FORMAT_VERSION, "run": fields,
            "history": [dataclasses.asdict(e) for e in history],
            "branches": {join: [dataclasses.asdict(b) for b in found] for join, found in branches.items()}}


def _without_token(event: EventRecord) -> EventRecord:
    if event.kind != OpKind.HOOK or not event.data:
        return event
    info = json.loads(event.data)
    if "token" not in info:
        return event
    info.pop("token")
    return dataclasses.replace(event, data=json.dumps(info))


def load_export(source: str | Path | dict[str, Any]) -> RunExport:
    """Read an export from a file path or from its JSON data.

    Raises:
        InvalidExport: the file cannot be read or is not an export of this format.
    """
    data = _read(source) if isinstance(source, (str, Path)) else source
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidExport(f"not a run export (expected format {FORMAT!r})")
    if data.get("version") != FORMAT_VERSION:
        raise InvalidExport(f"run export version {data.get('version')!r} is not supported "
                            f"(this code reads {FORMAT_VERSION})")
    try:
        run = RunRecord(**data["run"])
        history = [EventRecord(**e) for e in data["history"]]
        branches = {str(j): [BranchRecord(**b) for b in found] for j, found in data.get("branches", {}).items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidExport(f"malformed run export: {exc}") from None
    return RunExport(run, history, branches)


def _read(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise InvalidExport(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InvalidExport(f"{path} is not JSON: {exc}") from None


def __getattr__(name: str) -> Any:
    """``VERSION``, the old name of :data:`FORMAT_VERSION`, for one release (a ``DeprecationWarning``)."""
    if name != "VERSION":
        raise AttributeError(f"module 'workflows.export' has no attribute {name!r}")
    warnings.warn("workflows.export.VERSION is now workflows.export.FORMAT_VERSION (the export format's version, "
                  "not a code version; the old name goes in the next release)", DeprecationWarning, stacklevel=2)
    return FORMAT_VERSION
