"""``workflows flow ...``: the flow-control limits of the imported steps and who holds their slots,
and the runs holding and waiting for a limited workflow's slots."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any, Callable

AddCommand = Callable[..., argparse.ArgumentParser]


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def cmd_flow_limits(args: argparse.Namespace) -> int:
    """Print every imported step that has a concurrency or rate limit."""
    from ..core.model import registry
    from .commands import _imports

    _imports()
    print(f"{'STEP':28} {'CONCURRENCY':12} {'PER KEY':14} {'RATE/S':8} {'BURST':6} PER KEY")
    for step in sorted(registry.steps(), key=lambda s: s.name):
        limits = step.limits
        if limits is None:
            continue
        print(f"{step.name:28} {limits.concurrency or '-'!s:12} {limits.concurrency_key or '-':14} "
              f"{'-' if limits.rate is None else f'{limits.rate:g}':8} {limits.burst:<6g} {limits.rate_key or '-'}")
    return 0


def cmd_flow_slots(args: argparse.Namespace) -> int:
    """Print who holds the concurrency slots of a step (for one key value)."""
    from ..core.model import registry
    from ..runtime import get_engine
    from .commands import UsageError, _imports

    _imports()
    step = registry.get_step(args.step)
    limits = step.limits
    if limits is None or limits.concurrency is None:
        raise UsageError(f"step {args.step!r} has no concurrency limit")
    if limits.concurrency_key is not None and args.key is None:
        raise UsageError(f"step {args.step!r} is limited per {limits.concurrency_key!r}: give --key")
    if limits.concurrency_key is None and args.key is not None:
        raise UsageError(f"step {args.step!r} is limited globally: no --key")
    limit = f"step:{step.name}" + ("" if args.key is None else f"#{args.key}")
    engine = get_engine()
    now = engine.now()
    print(f"{'SLOT':5} {'STATE':8} {'EXPIRES':24} HOLDER (run#pos#branch#attempt)")
    held = 0
    for slot in engine.store.slot_holders(limit):
        live = slot.holder is not None and (slot.expires_at or 0) > now
        held += live
        print(f"{slot.number:<5} {'held' if live else 'expired':8} {_when(slot.expires_at):24} {slot.holder or '-'}")
    print(f"{held} of {limits.concurrency} slot(s) held")
    return 0


def cmd_flow_queued(args: argparse.Namespace) -> int:
    """Print the runs that hold a workflow's slots and the runs waiting for one, oldest first."""
    from ..core.admission.workflow_slots import queue_of
    from ..core.model import registry
    from ..runtime import get_engine
    from .commands import UsageError, _imports

    _imports()
    definition = registry.get_workflow(args.workflow)
    limits = definition.limits
    if limits is None:
        raise UsageError(f"workflow {args.workflow!r} has no concurrency limit")
    if (limits.concurrency_key is None) != (args.key is None):
        raise UsageError(f"workflow {args.workflow!r} is limited per {limits.concurrency_key!r}: give --key"
                         if args.key is None else f"workflow {args.workflow!r} is limited globally: no --key")
    limit = f"workflow:{definition.name}" + ("" if args.key is None else f"#{args.key}")
    store = get_engine().store
    holders = [s for s in store.slot_holders(limit) if s.holder is not None]
    waiters = [w for w in store.slot_holders(queue_of(limit)) if w.holder is not None]
    print(f"{'STATE':8} {'SINCE':24} RUN")
    for slot in holders:
        print(f"{'running':8} {'-':24} {slot.holder}")
    for waiter in waiters:
        print(f"{'queued':8} {_when(waiter.number / 1_000_000):24} {waiter.holder}")
    print(f"{len(holders)} of {limits.concurrency} slot(s) held, {len(waiters)} run(s) waiting")
    return 0


def add_flow_commands(sub: Any, add: AddCommand) -> None:
    """Register ``workflows flow limits|slots|queued``."""
    flow = add("flow", lambda a: 2, "flow control: step limits and slot holders").add_subparsers(
        dest="flow_cmd", required=True)
    add("limits", cmd_flow_limits, "list the imported steps' concurrency and rate limits", flow)
    p = add("slots", cmd_flow_slots, "show who holds a step's concurrency slots", flow)
    p.add_argument("step")
    p.add_argument("--key", help="the value of the step's concurrency_key argument (a keyed limit)")
    p = add("queued", cmd_flow_queued, "show the runs holding a workflow's slots and those waiting, in order", flow)
    p.add_argument("workflow")
    p.add_argument("--key", help="the value of the workflow's concurrency_key argument (a keyed limit)")
