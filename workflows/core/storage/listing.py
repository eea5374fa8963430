"""Run listings over write-sharded index keys: ``<status>#<k>`` and ``<workflow>#<k>``.

A listing Queries every shard of its key, newest first, and merges them into pages; the
page cursor carries each shard's position (the last item taken from it, or that the shard
is read to its end), so paging stays newest-first across shards and returns every run
once. Every Store lists this way: one rule for the order, the cursor and its errors.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from ...errors import SerializationError
from .rules import shard_of

T = TypeVar("T")

#: The last item taken from a shard: its creation time and run id (the rest of its index key is known).
Position = tuple[float, str]
#: ``query(shard, after, limit)``: up to ``limit`` items of one shard, newest first, after
#: ``after`` (None: from the newest), fewer only at the shard's end (a filtered Query pages on);
#: and whether more may follow them.
ShardQuery = Callable[[int, Position | None, int], tuple[list[T], bool]]


def listing_key(value: str, run_id: str, shards: int) -> str:
    """The sharded index key of a run under ``value`` (its status, or its workflow)."""
    return f"{value}#{shard_of(run_id, shards)}"


def shard_key(value: str, shard: int) -> str:
    """The index key of shard ``shard`` of ``value``."""
    return f"{value}#{shard}"


@dataclass
class ListingCursor:
    """Where a listing stands in every shard: shards read part-way, and shards read to the end."""

    kind: str
    positions: dict[int, Position] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)

    def encode(self) -> str:
        """The opaque cursor text."""
        text = json.dumps({"k": self.kind, "p": {str(s): list(p) for s, p in sorted(self.positions.items())},
                           "d": sorted(self.done)}, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode()

    @classmethod
    def decode(cls, cursor: str | None, kind: str, shards: int) -> ListingCursor:
        """Read a cursor of a ``kind`` listing over ``shards`` shards.

        Raises:
            SerializationError: not a cursor of such a listing.
        """
        if not cursor:
            return cls(kind)
        try:
            value = json.loads(base64.urlsafe_b64decode(cursor.encode()))
            if not isinstance(value, dict) or set(value) != {"k", "p", "d"} or value["k"] != kind:
                raise ValueError("not a listing cursor of this kind")
            positions = {_shard(s, shards): _position(p) for s, p in value["p"].items()}
            done = {_shard(s, shards) for s in value["d"]}
        except (ValueError, TypeError, AttributeError) as exc:
            raise SerializationError(f"invalid cursor {cursor!r}") from exc
        if set(positions) & done:
            raise SerializationError(f"invalid cursor {cursor!r}")
        return cls(kind, positions, done)


def _shard(value: object, shards: int) -> int:
    shard = int(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else -1
    if not 0 <= shard < shards or str(shard) != str(value):
        raise ValueError(f"no shard {value!r}")
    return shard


def _position(value: object) -> Position:
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], (int, float))
            and not isinstance(value[0], bool) and isinstance(value[1], str)):
        raise ValueError(f"not a position: {value!r}")
    return value[0], value[1]


@dataclass
class _Read(Generic[T]):
    shard: int
    items: list[T]
    more: bool


def merged_page(kind: str, shards: int, limit: int, cursor: str | None, query: ShardQuery[T],
                position: Callable[[T], Position]) -> tuple[list[T], str | None]:
    """One page of up to ``limit`` items, newest first across every shard, and the next cursor
    (None when every shard is read to its end).

    Each shard not yet read to its end gives up to ``limit`` items after its position: the
    newest ``limit`` of them all are the page (ties in time: the lower shard first, then each
    shard's own order). ``position(item)`` is an item's creation time and run id.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    state = ListingCursor.decode(cursor, kind, shards)
    reads = [_Read(shard, *query(shard, state.positions.get(shard), limit))
             for shard in range(shards) if shard not in state.done]
    ranked = sorted(((position(item)[0], read.shard, n, item) for read in reads for n, item in enumerate(read.items)),
                    key=lambda entry: (-entry[0], entry[1], entry[2]))[:limit]
    # A shard with more to come holds nothing newer than its last item read: nothing older is taken
    # from the others (with full reads this never bites; it keeps the order if a read came back short).
    frontier = max((position(read.items[-1])[0] for read in reads if read.more and read.items), default=None)
    ranked = [entry for entry in ranked if frontier is None or entry[0] >= frontier]
    taken = {read.shard: 0 for read in reads}
    for _, shard, _, item in ranked:
        taken[shard] += 1
        state.positions[shard] = position(item)
    for read in reads:
        if taken[read.shard] == len(read.items) and not read.more:
            state.done.add(read.shard)
            state.positions.pop(read.shard, None)
    page = [entry[3] for entry in ranked]
    return page, None if len(state.done) == shards else state.encode()
