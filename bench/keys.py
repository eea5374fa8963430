"""Writes per partition key: base tables and every GSI, counted by the counting front.

DynamoDB limits each partition to 1,000 write units per second, whatever the table's
capacity, and a GSI has partitions of its own, keyed by its own partition key. So the
front counts, for every write, the base table's partition key value and, for every GSI,
the index partition key of the item before and after the write, following DynamoDB's
rules for index writes (GSI.html, "Writes"):

* an item is in an index when it has the index's key attributes;
* it entering or leaving the index is one index write (on its new or old key);
* a change of the index key is two (a delete on the old key, a put on the new one);
* a change of only a projected attribute is one; anything else writes nothing to it.

Key values are reported by their shape: a value holding an id (a run id, a token hash)
is *per entity*: its rate grows with that entity (one run's steps, one fan-out's width),
not with the number of runs. Any other value (a status, a workflow name, a shard
label) is *shared* by all runs: its rate grows with the system's rate.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from .capacity import item_size, write_units

TOP_PER_INDEX, TOP_OVERALL = 5, 10
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}", re.IGNORECASE)


@dataclass(frozen=True)
class IndexSchema:
    """A GSI's key attributes and projection (``ALL``, ``KEYS_ONLY`` or ``INCLUDE``)."""

    name: str
    hash_key: str
    range_key: str | None
    projection: str
    included: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TableSchema:
    """A table's key attributes and its GSIs."""

    hash_key: str
    range_key: str | None
    indexes: tuple[IndexSchema, ...] = ()

    @property
    def key_names(self) -> frozenset[str]:
        return frozenset(n for n in (self.hash_key, self.range_key) if n)


def _keys(schema: list[dict[str, str]]) -> tuple[str, str | None]:
    hash_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")
    return hash_key, next((k["AttributeName"] for k in schema if k["KeyType"] == "RANGE"), None)


def schema_from_description(table: dict[str, Any]) -> TableSchema:
    """The schema of a DescribeTable ``Table`` description."""
    indexes = []
    for gsi in table.get("GlobalSecondaryIndexes") or []:
        hash_key, range_key = _keys(gsi["KeySchema"])
        projection = gsi.get("Projection") or {}
        indexes.append(IndexSchema(gsi["IndexName"], hash_key, range_key, projection.get("ProjectionType", "ALL"),
                                   frozenset(projection.get("NonKeyAttributes") or ())))
    return TableSchema(*_keys(table["KeySchema"]), indexes=tuple(indexes))


def projected(item: dict[str, Any], table: TableSchema, index: IndexSchema) -> dict[str, Any]:
    """The attributes of ``item`` (wire form) that ``index`` holds."""
    if index.projection == "ALL":
        return dict(item)
    names = table.key_names | {index.hash_key} | ({index.range_key} if index.range_key else set())
    if index.projection == "INCLUDE":
        names |= index.included
    return {n: v for n, v in item.items() if n in names}


def _in_index(item: dict[str, Any] | None, index: IndexSchema) -> bool:
    return item is not None and index.hash_key in item and (index.range_key is None or index.range_key in item)


def index_writes(table: TableSchema, index: IndexSchema, before: dict[str, Any] | None,
                 after: dict[str, Any] | None) -> list[tuple[str, int]]:
    """``(index partition key value, write units)`` of each write a table write makes to ``index``.

    ``before`` and ``after`` are the item in wire form (``{"name": {"S": "x"}}``), None when absent.
    """
    was, now = _in_index(before, index), _in_index(after, index)
    old = projected(before, table, index) if was and before is not None else None
    new = projected(after, table, index) if now and after is not None else None
    if old is None and new is None:
        return []
    if old is None or new is None:  # enters or leaves the index
        item = new if new is not None else old
        assert item is not None
        return [(key_text(item[index.hash_key]), write_units(item_size(item)))]
    moved = any(old.get(k) != new.get(k) for k in (index.hash_key, index.range_key) if k)
    if moved:  # a key change: the old entry is deleted, the new one put
        return [(key_text(old[index.hash_key]), write_units(item_size(old))),
                (key_text(new[index.hash_key]), write_units(item_size(new)))]
    if old != new:
        return [(key_text(new[index.hash_key]), write_units(max(item_size(old), item_size(new))))]
    return []


def key_text(value: dict[str, Any]) -> str:
    """The text of a key attribute value in wire form (``{"S": "x"}`` -> ``x``)."""
    ((_, raw),) = value.items()
    return str(raw)


def shape(value: str) -> tuple[str, bool]:
    """``(display, per_entity)`` of a key value: ids abbreviated to their first 8 characters."""
    display = _ID.sub(lambda m: m.group(0)[:8] + "…", value)
    return display, display != value


def table_label(table: str) -> str:
    """A table's name without its deployment prefix (``wfb-runs`` -> ``runs``)."""
    return table.split("-", 1)[1] if "-" in table else table


@dataclass
class _Tally:
    writes: int = 0
    units: int = 0


@dataclass
class KeyCounter:
    """Thread-safe writes and write units per (system, table or ``table.index``, key), over one window."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rows: dict[tuple[str, str, str], _Tally] = field(default_factory=lambda: defaultdict(_Tally))
    _began: float = field(default_factory=time.monotonic)

    def add(self, system: str, where: str, key: str, units: int) -> None:
        with self._lock:
            tally = self._rows[system, where, key]
            tally.writes += 1
            tally.units += units

    def record(self, system: str, table: str, schema: TableSchema, before: dict[str, Any] | None,
               after: dict[str, Any] | None, key: dict[str, Any] | None, units: int) -> None:
        """Count one attempted item write: the base table's key (``units``, charged even when a
        condition fails) and the index writes that the change from ``before`` to ``after`` makes."""
        label = table_label(table)
        item = after or before or key or {}
        if schema.hash_key in item:
            self.add(system, label, key_text(item[schema.hash_key]), units)
        for index in schema.indexes:
            for value, index_units in index_writes(schema, index, before, after):
                self.add(system, f"{label}.{index.name}", value, index_units)

    def reset(self) -> None:
        with self._lock:
            self._rows.clear()
            self._began = time.monotonic()

    def rows(self) -> list[dict[str, Any]]:
        """One counter row per system with its ``hot_keys`` (zero requests, so request totals are unchanged)."""
        with self._lock:
            window = max(time.monotonic() - self._began, 1e-9)
            by_system: dict[str, dict[tuple[str, str], _Tally]] = defaultdict(dict)
            for (system, where, key), tally in self._rows.items():
                by_system[system][where, key] = _Tally(tally.writes, tally.units)
        return [{"system": system, "role": "front", "service": "keys", "operation": "hot_keys", "requests": 0,
                 "hot_keys": hot_keys(tallies, window)} for system, tallies in sorted(by_system.items())]


def _entry(where: str, key: str, tally: _Tally, window: float) -> dict[str, Any]:
    display, entity = shape(key)
    return {"table": where, "key": display, "per_entity": entity, "writes": tally.writes, "units": tally.units,
            "writes_per_s": round(tally.writes / window, 3), "units_per_s": round(tally.units / window, 3)}


def hot_keys(tallies: dict[tuple[str, str], _Tally], window: float) -> dict[str, Any]:
    """The hottest keys of a window: top 5 per table and per index (with the hottest shared and the
    hottest per-entity key of each), and the top 10 overall, by write units."""
    def hotness(entry: dict[str, Any]) -> tuple[int, int]:
        return entry["units"], entry["writes"]

    entries = [_entry(where, key, tally, window) for (where, key), tally in tallies.items()]
    tables: dict[str, Any] = {}
    for where in sorted({e["table"] for e in entries}):
        mine = sorted((e for e in entries if e["table"] == where), key=hotness, reverse=True)
        shared = [e for e in mine if not e["per_entity"]]
        entity = [e for e in mine if e["per_entity"]]
        tables[where] = {"writes": sum(e["writes"] for e in mine), "units": sum(e["units"] for e in mine),
                         "keys": len(mine), "shared_units": sum(e["units"] for e in shared),
                         "top": mine[:TOP_PER_INDEX],
                         "hottest_shared": shared[0] if shared else None,
                         "hottest_entity": entity[0] if entity else None}
    return {"window_s": round(window, 3), "tables": tables,
            "top": sorted(entries, key=hotness, reverse=True)[:TOP_OVERALL]}


def hot_keys_of(counts: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``hot_keys`` of a window's counter rows (None when the front did not count keys)."""
    return next((row["hot_keys"] for row in counts if row.get("operation") == "hot_keys"), None)


def section(results: Iterable[Any]) -> str:
    """The report's section: the hottest keys of each (scenario, system), overall top 10."""
    lines = ["| Scenario | System | Window s | Table or index | Key | Writes | WCU | WCU/s |",
             "|---|---|---|---|---|---|---|---|"]
    for result in results:
        hot = hot_keys_of(result.counts)
        if not hot:
            continue
        for entry in hot["top"]:
            key = entry["key"] + (" (per entity)" if entry["per_entity"] else "")
            lines.append(f"| {result.scenario} | {result.system} | {hot['window_s']:.1f} | {entry['table']} | "
                         f"`{key}` | {entry['writes']} | {entry['units']} | {entry['units_per_s']:.1f} |")
    body = "\n".join(lines) if len(lines) > 2 else "No per-key counts (the front did not report them)."
    return "### Hottest partition keys (write units per key, base tables and GSIs; top 10 per window)\n\n" + body


__all__ = ["IndexSchema", "KeyCounter", "TableSchema", "hot_keys", "hot_keys_of", "index_writes", "projected",
           "schema_from_description", "section", "shape", "table_label"]
