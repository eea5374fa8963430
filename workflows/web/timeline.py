"""A run's timeline as pure geometry: spans from its history, laid out as SVG shapes.

Nothing here reads a store or renders HTML. :func:`spans` turns a run and its history
into :class:`Span` s (one per step attempt, one per wait), :func:`layout` places them
on lanes and a time axis as :class:`Bar` s, which a template draws as ``<rect>`` s.

Times come from the history: a step attempt runs from its ``started_at`` to its ``at``.
A wait (sleep, hook, signal, child result) has no recorded start: it begins when the
op before it ended (or the run started), which is when the replay reached it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..core.model.records import BranchRecord, EventRecord, OpKind, RunRecord

#: Op kinds drawn as waits, with the word shown on their lane.
WAIT_KINDS = {OpKind.SLEEP.value: "sleep", OpKind.HOOK_WAIT.value: "hook", OpKind.SIGNAL.value: "signal",
              OpKind.CHILD_RESULT.value: "child"}
MIN_BAR_WIDTH = 2.0


@dataclass(frozen=True)
class Span:
    """One thing that took time in a run.

    Attributes:
        lane: the lane's label; spans of one op (its attempts) share a lane.
        kind: ``"attempt"`` (a step or branch attempt) or ``"wait"``.
        status: ``completed``, ``failed``, ``running``, ``waiting``, or how a wait ended.
        start / end: epoch seconds; ``end`` None while it is still going.
        title: the tooltip text.
        link: a run id the span links to (a child run), or None.
        approx: its times are not recorded (a branch's last attempt), only bounded.
    """

    lane: str
    kind: str
    status: str
    start: float
    end: float | None
    title: str
    link: str | None = None
    approx: bool = False


@dataclass(frozen=True)
class Bar:
    """A span placed on the chart, in pixels; ``css`` holds its classes."""

    x: float
    y: float
    width: float
    height: float
    css: str
    title: str
    link: str | None = None


@dataclass(frozen=True)
class Tick:
    """A time-axis mark at ``x`` pixels, labelled relative to the run's start."""

    x: float
    label: str


@dataclass
class Chart:
    """Everything a template needs to draw the timeline."""

    width: float
    height: float
    lanes: list[tuple[float, str]] = field(default_factory=list)  # (y of the lane's text, label)
    bars: list[Bar] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    axis_y: float = 0.0


def _took(start: float, end: float | None) -> str:
    return "still going" if end is None else f"{end - start:.3f}s"


def _attempt(lane: str, status: str, start: float, end: float | None, attempt: int | None, error: str | None) -> Span:
    title = f"{lane} attempt {attempt or 1}: {status}, {_took(start, end)}" + (f": {error}" if error else "")
    return Span(lane, "attempt", status, start, end, title)


def spans(run: RunRecord, history: list[EventRecord], now: float,
          branches: dict[int, tuple[list[EventRecord], list[BranchRecord]]] | None = None) -> list[Span]:
    """The spans of a run, in history order.

    Args:
        run: the run.
        history: its history records, in seq order.
        now: the end of spans still going (a live run's current op).
        branches: per fan-out position, the branch attempt records (the join's history)
            and the recorded branch outcomes; each branch gets its own lane.
    """
    out: list[Span] = []
    prev_end = run.created_at
    recorded: set[int] = set()
    children: dict[str, list[str]] = {}  # child runs started so far, by workflow name
    awaited: set[str] = set()  # workflow names whose child result was recorded already
    for event in history:
        lane = f"#{event.pos} {event.name or event.kind}"
        if event.kind == OpKind.ATTEMPT.value:
            out.append(_attempt(lane, "failed", event.started_at or prev_end, event.at, event.attempt, event.error))
            continue
        if not event.is_outcome:
            continue
        recorded.add(event.pos)
        if event.kind == OpKind.STEP.value:
            out.append(_attempt(lane, event.status, event.started_at or prev_end, event.at, event.attempt,
                                event.error))
        elif event.kind in WAIT_KINDS:
            link = None
            if event.kind == OpKind.CHILD_RESULT.value:
                # The record does not name its child: link only when it can be only one.
                started = children.get(event.name or "", [])
                link = started[0] if len(started) == 1 and event.name not in awaited else None
                awaited.add(event.name or "")
            title = f"{lane} {WAIT_KINDS[event.kind]}: {event.status}, {_took(prev_end, event.at)}"
            out.append(Span(f"#{event.pos} {WAIT_KINDS[event.kind]} {event.name or ''}".rstrip(), "wait",
                            event.status, prev_end, event.at, title, link))
        elif event.kind == OpKind.CHILD.value:
            children.setdefault(event.name or "", []).append(json.loads(event.data or "{}").get("run_id", ""))
        elif event.kind == OpKind.PARALLEL.value and branches and event.pos in branches:
            out.extend(_branch_spans(event.pos, prev_end, event.at, *branches[event.pos]))
        prev_end = max(prev_end, event.at)
    out.extend(_current(run, recorded, prev_end, now, branches or {}))
    return out


def _branch_spans(pos: int, start: float, end: float | None, attempts: list[EventRecord],
                  results: list[BranchRecord]) -> list[Span]:
    """One lane per branch: its failed attempts as recorded, then its last attempt, which
    ran between the previous attempt's end and the fan-out's end (its times are not recorded)."""
    out: list[Span] = []
    last_end: dict[int, float] = {}
    for event in attempts:
        lane = f"#{pos}.{event.pos} {event.name or 'branch'}"
        out.append(_attempt(lane, "failed", event.started_at or start, event.at, event.attempt, event.error))
        last_end[event.pos] = max(last_end.get(event.pos, start), event.at)
    names = {event.pos: event.name for event in attempts}
    for result in results:
        lane = f"#{pos}.{result.index} {names.get(result.index) or 'branch'}"
        status = "failed" if result.error is not None else "completed"
        span = _attempt(lane, status, last_end.get(result.index, start), end, None, result.error)
        out.append(Span(span.lane, span.kind, span.status, span.start, span.end,
                        span.title + " (within these bounds; its times are not recorded)", approx=True))
    return out


def _current(run: RunRecord, recorded: set[int], prev_end: float, now: float,
             branches: dict[int, tuple[list[EventRecord], list[BranchRecord]]]) -> list[Span]:
    """The op the run is at, if it has no outcome yet: running, waiting, or cut short by the run's end."""
    waiting = run.waiting or {}
    kind, pos = waiting.get("kind"), run.cursor
    if not kind or pos < 0 or pos in recorded or (run.is_terminal and run.ended_at is None):
        return []
    end = run.ended_at if run.is_terminal else None
    status = run.status if run.is_terminal else ("running" if kind == OpKind.STEP.value else "waiting")
    name = waiting.get("name") or ""
    if kind == OpKind.STEP.value:
        start = float(waiting.get("since") or prev_end)
        return [_attempt(f"#{pos} {name or 'step'}", status, start, end, None, None)]
    if kind in WAIT_KINDS:
        label = f"#{pos} {WAIT_KINDS[kind]} {name}".rstrip()
        due = waiting.get("due")
        title = f"{label}: {status}" + (f", due in {due - now:.1f}s" if due and end is None else "")
        return [Span(label, "wait", status, prev_end, end, title, waiting.get("child"))]
    if kind == OpKind.PARALLEL.value and pos in branches:
        return _branch_spans(pos, prev_end, end, *branches[pos])
    return []


def nice_step(seconds: float, ticks: int = 6) -> float:
    """A round tick interval (1, 2 or 5 times a power of ten seconds) giving about ``ticks`` marks."""
    raw = max(seconds, 1e-3) / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power  # pragma: no cover - the loop always returns


def tick_label(offset: float) -> str:
    """``+1.5s``, ``+2m30s``, ``+1h05m``: an offset from the run's start."""
    if offset < 60:
        return f"+{offset:.3g}s"
    if offset < 3600:
        minutes, seconds = divmod(round(offset), 60)
        return f"+{minutes}m{seconds:02d}s" if seconds else f"+{minutes}m"
    hours, minutes = divmod(round(offset) // 60, 60)
    return f"+{hours}h{minutes:02d}m"


@dataclass(frozen=True)
class Geometry:
    """The sizes of a chart, in pixels.

    Attributes:
        width: the whole chart's width.
        label_width: the lane labels' column, left of the plot.
        lane_height: one lane's height.
        bar_height: a bar's height within its lane.
    """

    width: float = 900.0
    label_width: float = 220.0
    lane_height: float = 22.0
    bar_height: float = 14.0


def layout(items: list[Span], start: float, now: float, geometry: Geometry = Geometry()) -> Chart:
    """Place spans on lanes (in order of first appearance) and a shared time axis.

    The axis runs from ``start`` (the run's creation) to the latest end, or ``now`` for a
    span still going. A bar is at least ``MIN_BAR_WIDTH`` wide so an instant step shows.
    """
    width, label_width = geometry.width, geometry.label_width
    lane_height, bar_height = geometry.lane_height, geometry.bar_height
    lanes: dict[str, int] = {}
    for span in items:
        lanes.setdefault(span.lane, len(lanes))
    end = max([start, *[s.end if s.end is not None else now for s in items]])
    total = max(end - start, 1e-3)
    plot = width - label_width - 10

    def x_of(t: float) -> float:
        return label_width + (min(max(t, start), end) - start) / total * plot

    chart = Chart(width=width, height=len(lanes) * lane_height + 30, axis_y=len(lanes) * lane_height + 4)
    chart.lanes = [(i * lane_height + lane_height / 2 + 4, label) for label, i in lanes.items()]
    for span in items:
        x0, x1 = x_of(span.start), x_of(span.end if span.end is not None else now)
        y = lanes[span.lane] * lane_height + (lane_height - bar_height) / 2
        css = f"bar {span.kind} {span.status}" + (" open" if span.end is None else "") + \
            (" approx" if span.approx else "")
        chart.bars.append(Bar(x0, y, max(x1 - x0, MIN_BAR_WIDTH), bar_height, css, span.title, span.link))
    step = nice_step(total)
    chart.ticks = [Tick(x_of(start + i * step), tick_label(i * step)) for i in range(int(total / step) + 1)]
    return chart


def chart_for(run: RunRecord, history: list[EventRecord], now: float,
              branches: dict[int, tuple[list[EventRecord], list[BranchRecord]]] | None = None) -> Chart:
    """The laid-out timeline of a run (see :func:`spans` and :func:`layout`)."""
    return layout(spans(run, history, now, branches), run.created_at, run.ended_at or now)


def branch_positions(history: list[EventRecord], run: RunRecord) -> list[int]:
    """The fan-out positions of a run whose branches are worth reading (recorded or current)."""
    found = [e.pos for e in history if e.kind == OpKind.PARALLEL.value and e.is_outcome]
    waiting: dict[str, Any] = run.waiting or {}
    if waiting.get("kind") == OpKind.PARALLEL.value and run.cursor >= 0 and run.cursor not in found:
        found.append(run.cursor)
    return found
