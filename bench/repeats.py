"""Repeats in alternating order, and the figures made of them.

A latency scenario runs ``R`` times, the systems taking turns (workflows, celery,
workflows, celery...), so a slow minute of a shared machine lands on both sides.
Each repeat's ratio pairs a system's figure with Celery's figure of the same
repeat (measured next to it); the report gives the median of those ratios and
their spread (min-max), and the median of the per-repeat p50s.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence, TypeVar

T = TypeVar("T")


def alternation(systems: Sequence[T], repeats: int) -> list[tuple[int, T]]:
    """The turns of one scenario: ``(repeat, system)``, every system once per repeat, in order."""
    return [(repeat, system) for repeat in range(repeats) for system in systems]


def median(values: Sequence[float | None]) -> float | None:
    """The median of the figures that exist; None without any."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


@dataclass(frozen=True)
class Ratio:
    """A system's figure over the baseline's, repeat by repeat: the median and its spread."""

    per_repeat: tuple[float, ...]

    @property
    def median(self) -> float | None:
        return median(self.per_repeat)

    @property
    def low(self) -> float | None:
        return min(self.per_repeat, default=None)

    @property
    def high(self) -> float | None:
        return max(self.per_repeat, default=None)

    def text(self) -> str:
        """``0.52x (0.48-0.61)``, or ``—`` without any paired repeat."""
        if self.median is None:
            return "—"
        spread = f" ({self.low:.2f}-{self.high:.2f})" if len(self.per_repeat) > 1 else ""
        return f"{self.median:.2f}x{spread}"

    def to_json(self) -> dict[str, object]:
        return {"median": self.median, "min": self.low, "max": self.high, "per_repeat": list(self.per_repeat)}


def paired_ratio(ours: dict[int, float | None], base: dict[int, float | None]) -> Ratio:
    """Ratios of the repeats both sides measured (by repeat number), skipping missing figures."""
    ratios = []
    for repeat in sorted(ours):
        mine, theirs = ours[repeat], base.get(repeat)
        if mine is not None and theirs:
            ratios.append(mine / theirs)
    return Ratio(tuple(ratios))
