"""Where a join's items live, in every Store: one partition per counter shard plus the root.

Branch ``i`` belongs to counter shard ``s = i // SHARD_SIZE``. Its result (entry ``i``) and
the shard's counter (entry ``-2 - s``) live in partition ``<join id>#<s>``; the root counter
(entry -1, the set of full shards) lives in partition ``<join id>``. So one partition key takes
at most ~2 x SHARD_SIZE writes per fan-out (results and counts), whatever its width. (An entry
is a join item's sort key, stored as ``slot``; the glossary keeps "slot" for flow control.)
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, TypeVar

from .states import OpKind

T = TypeVar("T")

SHARD_SIZE = 100
ROOT_ENTRY = -1
_WIDTH = re.compile(r"(\d+) branches")
#: A ``first_of`` race's name: its candidates' ``kind:label``, joined (``core.ops.first``).
RACE_SEPARATOR = " | "
RACE_KINDS = frozenset({"signal", "timer", "hook", "step", "child"})


def shard_entry(shard: int) -> int:
    """The entry of shard ``shard``'s counter."""
    return -2 - shard


#: The tally of a fan-out with completion criteria (core.ops.completion): the sets of branches that succeeded
#: and failed, at entry 0 of the root partition (branch results live in the shard partitions).
TALLY_ENTRY = 0


def shard_count(total: int) -> int:
    """How many counter shards a join of ``total`` branches uses."""
    return max(1, -(-total // SHARD_SIZE))


def shard_size(shard: int, total: int) -> int:
    """How many branches of a ``total``-branch join counter shard ``shard`` counts."""
    return min(SHARD_SIZE, total - shard * SHARD_SIZE)


def branch_shard(index: int) -> int:
    """The counter shard of branch ``index``."""
    return index // SHARD_SIZE


def shard_partition(join_id: str, shard: int) -> str:
    """The partition key of counter shard ``shard``: its branches' results and its counter."""
    return f"{join_id}#{shard}"


def partitions(join_id: str, total: int) -> list[str]:
    """Every partition key of a ``total``-branch join: the root, then each shard's."""
    return [join_id, *(shard_partition(join_id, s) for s in range(shard_count(total)))]


def fan_out_width(name: str | None) -> int | None:
    """The branch count of a fan-out from its op name (``"<n> branches"``), or of a ``first_of``
    race from its name (``"signal:go | step:charge"``: one branch per step candidate), if it
    says one (a race without step candidates has no join: None)."""
    found = _WIDTH.fullmatch(name or "")
    if found:
        return int(found.group(1))
    parts = (name or "").split(RACE_SEPARATOR)
    if name and all(part.split(":", 1)[0] in RACE_KINDS and ":" in part for part in parts):
        return sum(1 for part in parts if part.startswith("step:")) or None
    return None


def fan_out_width_at(pos: int, outcome_names: Mapping[int, str | None],
                     waiting: Mapping[str, Any] | None) -> int | None:
    """The width of a run's fan-out at op ``pos``: from its recorded outcome's name
    (``outcome_names``: op position -> name), else from the op in flight (``waiting``)."""
    if pos in outcome_names:
        return fan_out_width(outcome_names[pos])
    if (waiting or {}).get("kind") in (OpKind.PARALLEL, OpKind.FIRST_OF):
        return fan_out_width(str((waiting or {}).get("name")))
    return None


def read_by_shard(total: int | None, read: Callable[[int], list[T]], full: Callable[[list[T]], bool]) -> list[T]:
    """What ``read(shard)`` finds in every counter shard of a ``total``-branch join; with
    ``total`` unknown, in shards 0, 1, ... while ``full`` says the shard read last was full
    (every shard of a complete join but its last is)."""
    if total is not None:
        return [found for shard in range(shard_count(total)) for found in read(shard)]
    out: list[T] = []
    shard = 0
    while True:
        found = read(shard)
        out += found
        if not found or not full(found):
            return out
        shard += 1
