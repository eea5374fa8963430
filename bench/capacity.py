"""DynamoDB billing units and SQS message counts of one request, as AWS on-demand would bill them,
and the write rate on the hottest partition keys extrapolated to scale (``python -m bench.capacity``).

Item sizes follow DynamoDB's rules (attribute names plus values); a write is billed
on the larger of the item before and after it, so the counting front looks the
item up in moto's in-process tables around each write. Transactions cost double.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from workflows.core.storage.metering import DDB_READS, DDB_WRITES  # noqa: F401 - the bench's modules import them here


def item_size(item: dict[str, Any] | None) -> int:
    """DynamoDB's size of an item in wire (attribute-value) form: names plus values, in bytes."""
    return sum(len(name.encode()) + value_size(value) for name, value in (item or {}).items())


def value_size(value: dict[str, Any]) -> int:
    """Size of one attribute value (``{"S": "x"}``, ``{"N": "1"}``, ``{"M": {...}}``...)."""
    (kind, raw), = value.items()
    if kind == "S":
        return len(raw.encode())
    if kind == "N":
        return max(1, math.ceil(len(raw.lstrip("-").replace(".", "").lstrip("0") or "0") / 2) + 1)
    if kind == "B":
        return len(raw) * 3 // 4
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in raw)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in raw)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in raw.items())
    return len(json.dumps(raw))


def write_units(size: int) -> int:
    """Write request units of one item write (1 per KB, at least 1)."""
    return max(1, math.ceil(size / 1024))


def read_units(size: int, consistent: bool) -> float:
    """Read request units of reading ``size`` bytes (1 per 4 KB strongly consistent, half that eventually)."""
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


class Sizer:
    """Sizes stored items by looking them up in moto's in-process DynamoDB (writes are
    billed on the larger of the item before and after)."""

    def __init__(self, region: str = "us-east-1") -> None:
        self.region = region
        self._schemas: dict[str, Any] = {}

    @staticmethod
    def _backend(region: str) -> Any:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends[DEFAULT_ACCOUNT_ID][region]

    def item(self, table: str | None, key: dict[str, Any] | None) -> dict[str, Any] | None:
        """The stored item in wire form (``{"name": {"S": "x"}}``), None when absent or unknown."""
        if not table or not key:
            return None
        try:
            found = self._backend(self.region).get_item(table, key)
            return dict(found.to_json()["Attributes"]) if found is not None else None
        except Exception:  # an unknown table or key shape
            return None

    def schema(self, table: str | None) -> Any:
        """The table's key schema and GSIs (:class:`bench.keys.TableSchema`), read once per table
        from moto's DescribeTable; None while the table does not exist."""
        if not table:
            return None
        if table not in self._schemas:
            from .keys import schema_from_description

            try:
                described = self._backend(self.region).describe_table(table)["Table"]
                self._schemas[table] = schema_from_description(described)
            except Exception:  # not created yet: asked again next time
                return None
        return self._schemas[table]

    def item_counts(self) -> dict[str, int]:
        """Items in every table of moto's in-process DynamoDB, by table name."""
        tables = self._backend(self.region).tables
        return {name: sum(map(len, list(table.items.values()))) if table.range_key_attr else len(table.items)
                for name, table in list(tables.items())}

    def clear(self, names: list[str]) -> dict[str, int]:
        """Empty the named tables (those that exist); return how many items each held. The caller
        holds the front's DynamoDB turn, so no request sees a table half cleared."""
        counts = self.item_counts()
        tables = self._backend(self.region).tables
        for name in names:
            if name in tables:
                tables[name].items.clear()
        return {name: counts[name] for name in names if name in counts}

    def stored(self, table: str | None, key: dict[str, Any] | None) -> int:
        if not table or not key:
            return 0
        try:
            from moto.core import DEFAULT_ACCOUNT_ID
            from moto.dynamodb.models import dynamodb_backends

            item = dynamodb_backends[DEFAULT_ACCOUNT_ID][self.region].get_item(table, key)
            return int(item.size()) if item is not None else 0
        except Exception:  # an unknown table or key shape: size unknown, count the minimum
            return 0

    def key_of(self, table: str | None, item: dict[str, Any]) -> dict[str, Any] | None:
        try:
            from moto.core import DEFAULT_ACCOUNT_ID
            from moto.dynamodb.models import dynamodb_backends

            names = [k["AttributeName"] for k in
                     dynamodb_backends[DEFAULT_ACCOUNT_ID][self.region].get_table(str(table)).schema]
            return {n: item[n] for n in names if n in item}
        except Exception:
            return None


def writes_before(op: str, body: dict[str, Any], sizer: Sizer) -> list[tuple[str | None, dict | None, int]]:
    """(table, key, size before) of every item a write request touches."""
    touched: list[tuple[str | None, dict | None, int]] = []
    if op in ("UpdateItem", "DeleteItem", "PutItem"):
        table = body.get("TableName")
        key = body.get("Key") or sizer.key_of(table, body.get("Item", {}))
        touched.append((table, key, sizer.stored(table, key)))
    elif op == "TransactWriteItems":
        for action in body.get("TransactItems", []):
            for kind, inner in action.items():
                table = inner.get("TableName")
                key = inner.get("Key") or sizer.key_of(table, inner.get("Item", {}))
                touched.append((table, key, sizer.stored(table, key) if kind != "ConditionCheck" else -1))
    elif op == "BatchWriteItem":
        for table, requests in body.get("RequestItems", {}).items():
            for request in requests:
                inner = request.get("PutRequest") or request.get("DeleteRequest") or {}
                key = inner.get("Key") or sizer.key_of(table, inner.get("Item", {}))
                touched.append((table, key, sizer.stored(table, key)))
    return touched


def request_units(service: str, op: str, body: dict[str, Any], response: dict[str, Any],
           before: list[tuple[str | None, dict | None, int]], sizer: Sizer) -> dict[str, float]:
    """Items, read/write units and SQS messages of one finished request."""
    if service == "sqs":
        if op.endswith("Batch"):
            return {"messages": len(body.get("Entries", []))}
        if op == "ReceiveMessage":
            return {"messages": len(response.get("Messages", []))}
        return {"messages": 1 if op in ("SendMessage", "DeleteMessage") else 0}
    if service != "dynamodb":
        return {}
    consistent = bool(body.get("ConsistentRead"))
    if op == "GetItem":
        item = response.get("Item")
        return {"items": 1 if item else 0, "read_units": read_units(item_size(item), consistent)}
    if op in ("Query", "Scan"):
        items = response.get("Items", [])
        return {"items": len(items), "read_units": read_units(sum(map(item_size, items)), consistent)}
    if op in ("BatchGetItem", "TransactGetItems"):
        found = [i for items in response.get("Responses", {}).values() for i in items] if op == "BatchGetItem" \
            else [r.get("Item") for r in response.get("Responses", []) if r.get("Item")]
        factor = 2 if op == "TransactGetItems" else 1
        return {"items": len(found), "read_units": factor * sum(read_units(item_size(i), True) for i in found)}
    if op in DDB_WRITES:
        factor = 2 if op == "TransactWriteItems" else 1
        units = 0
        for table, key, size_before in before:
            if size_before < 0:  # a ConditionCheck: read units, counted as one write unit here
                units += 1
                continue
            units += write_units(max(size_before, sizer.stored(table, key)))
        return {"items": len(before), "write_units": factor * units}
    return {}


# --- Extrapolation: the write rate on the hottest partition key of every table and index at scale ---

PARTITION_WCU = 1000  # write units per second one partition (so one key value) takes, whatever the table's capacity
PARTITION_RCU = 3000
SAFE_SHARE = 0.5  # design target: every key under half of the partition limit
RUNS_PER_S, STEPS_PER_S = 10_000, 100_000


def sharded_today() -> dict[str, int]:
    """Shard counts of the write-sharded index keys in the measured design (others: one key per value)."""
    from workflows.core.storage.rules import SCHEDULE_SHARDS
    from workflows.core.storage.tags import TAG_SHARDS
    from workflows.settings import Settings

    shards = Settings.from_env().index_shards
    return {"runs.by_lease": shards, "runs.by_retention": shards, "timers.by_due": shards,
            "schedules.by_due": SCHEDULE_SHARDS, "runs.by_status": shards, "runs.by_workflow": shards,
            "tags": TAG_SHARDS}


#: Indexes whose keys carry their shard (``pending#3``): each measured key is one shard of one value.
KEYED_BY_SHARD = frozenset({"runs.by_status", "runs.by_workflow", "tags"})
#: Runs per shard a window needs before its hottest shard of such a key is counted.
RUNS_TO_SPREAD = 10


def shards_needed(rate: float, limit: float = PARTITION_WCU, share: float = SAFE_SHARE) -> int:
    """The fewest shards N that keep ``rate`` spread evenly over N keys strictly under ``share`` of
    ``limit`` per key."""
    return math.floor(rate / (limit * share)) + 1 if rate > 0 else 1


def _measured(results: list[dict[str, Any]], system: str) -> list[tuple[dict[str, Any], dict[str, Any], int, int]]:
    """(result, hot_keys, completed runs, steps) of each window of ``system`` that counted keys."""
    from .keys import hot_keys_of

    out = []
    for result in results:
        hot = hot_keys_of(result.get("counts", []))
        runs = len(result.get("timing", {}).get("latencies", []))
        if result.get("system") == system and hot and runs and result.get("steps") and not result.get("error"):
            out.append((result, hot, runs, int(result["steps"])))
    return out


def _shared_key(where: str, table: dict[str, Any], shards: int) -> tuple[str, float] | None:
    """(shown key, write units) of an index's hottest shared key in one window: for a key that carries
    its shard (``pending#3``), that shard as measured (the hottest of a few runs' uneven spread: an upper
    bound); for a shard-labelled index, the mean over its shards (what an even spread of many runs
    gives); else the hottest value."""
    top = table.get("hottest_shared")
    if not top:
        return None
    if where in KEYED_BY_SHARD:
        return f"{top['key']} (hottest of {shards} shards)", float(top["units"])
    if shards > 1:
        return f"{top['key']} (mean of {shards} shards)", table.get("shared_units", top["units"]) / shards
    return top["key"], float(top["units"])


def shared_rates(results: list[dict[str, Any]], system: str = "workflows",
                 current: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Per table and index, the hottest shared key (a status, a workflow, a shard) at 10,000 runs/s
    of 10 steps each (100,000 steps/s): ``a`` write units per run plus ``b`` per step, fitted from
    the one-step runs of ``throughput`` and the longer runs of the other windows (the steepest slope
    wins); ``unsharded`` is the rate one key would take without today's shards."""
    current = sharded_today() if current is None else current
    repeats: dict[tuple[str, str], list[tuple[int, float, str]]] = {}
    for result, hot, runs, _steps in _measured(results, system):
        for where, table in hot["tables"].items():
            shards = current.get(where, 1)
            if where in KEYED_BY_SHARD and runs < RUNS_TO_SPREAD * shards:
                continue  # a few runs fall unevenly on the shards: their hottest shard says nothing at scale
            found = _shared_key(where, table, shards)
            if found:
                repeats.setdefault((where, result["scenario"]), []).append(
                    (int(result["steps_per_run"]), found[1] / runs, found[0]))
    per_run: dict[str, list[tuple[int, float, str, str]]] = {}
    for (where, scenario), seen in repeats.items():  # a scenario's repeats: their mean units per run
        hottest = max(seen, key=lambda p: p[1])
        per_run.setdefault(where, []).append((seen[0][0], sum(p[1] for p in seen) / len(seen), hottest[2], scenario))
    out: dict[str, dict[str, Any]] = {}
    for where, points in per_run.items():
        ones = [p for p in points if p[0] == 1]
        if not ones:
            continue
        one = max(ones, key=lambda p: p[1])
        slopes = [((units - one[1]) / (steps - 1), name) for steps, units, _, name in points if steps > 1]
        per_step, slope_from = max(slopes, default=(0.0, "—"))
        per_step = max(per_step, 0.0)
        fixed = max(one[1] - per_step, 0.0)
        rate = fixed * RUNS_PER_S + per_step * STEPS_PER_S
        shards = current.get(where, 1)
        out[where] = {"table": where, "key": one[2], "scenario": f"{one[3]} + {slope_from}", "units_per_run": fixed,
                      "units_per_step": per_step, "rate": rate, "share": rate / PARTITION_WCU, "shards_today": shards,
                      "unsharded": rate * shards, "shards_needed": shards_needed(rate * shards)}
    return out


def entity_rates(results: list[dict[str, Any]], system: str = "workflows") -> dict[str, dict[str, Any]]:
    """Per table and index, the hottest per-entity key (one run's, one fan-out's): its write units
    per step of that entity, the slope between the narrowest and the widest window of a series
    (fan-out widths, history lengths), so fixed per-run writes cancel out. ``at_steps`` is the rate
    if one entity alone took 100,000 steps/s (a fan-out can; a sequential run cannot)."""
    series: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for result, hot, _runs, _steps in _measured(results, system):
        name = result["scenario"]
        kind = "fan-out" if name.startswith("fan-out-") else "history-inline" if name.startswith(
            "history-inline-") else "history" if name.startswith("history-") else None
        if kind is None:
            continue
        for where, table in hot["tables"].items():
            if table.get("hottest_entity"):
                series.setdefault((where, kind), []).append((int(result["steps_per_run"]), table["hottest_entity"]))
    out: dict[str, dict[str, Any]] = {}
    for (where, kind), points in series.items():
        points.sort(key=lambda p: p[0])
        (small, low), (large, high) = points[0], points[-1]
        if large == small:
            continue
        slope = max(0.0, (high["units"] - low["units"]) / (large - small))
        entry = {"table": where, "key": high["key"], "series": f"{kind} {small} -> {large}", "units_per_step": slope,
                 "at_steps": slope * STEPS_PER_S, "steps_per_s_to_half": (SAFE_SHARE * PARTITION_WCU / slope)
                 if slope else None, "units_at_widest": high["units"]}
        if where not in out or slope > out[where]["units_per_step"]:
            out[where] = entry
    return out


def latest_results(folder: Path) -> Path:
    """The newest benchmark results JSON under ``folder`` (by its name's timestamp)."""
    found = sorted(folder.glob("bench-*.json"), key=lambda p: p.name.split("-")[1])
    if not found:
        raise FileNotFoundError(f"no bench-*.json under {folder}: run python -m bench first")
    return found[-1]


def _n(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def capacity_tables(results: list[dict[str, Any]], system: str = "workflows", design_shards: int = 8) -> str:
    """The extrapolation as Markdown: shared keys (and what ``design_shards`` shards make of them),
    then per-entity keys."""
    shared, entity = shared_rates(results, system), entity_rates(results, system)
    lines = [f"Shared keys at {RUNS_PER_S:,} runs/s and {STEPS_PER_S:,} steps/s ({system}; limit "
             f"{PARTITION_WCU:,} WCU/s per key; WCU/s = WCU per run x {RUNS_PER_S:,} + WCU per step x "
             f"{STEPS_PER_S:,}):", "",
             "| Table or index | Hottest key | Windows | WCU per run | WCU per step | WCU/s on the key | % of limit "
             f"| Shards today | One key unsharded, WCU/s | Per shard at N={design_shards} | % | N for < 50% |",
             "|" + "---|" * 12]
    for where, e in sorted(shared.items()):
        per_shard = e["unsharded"] / design_shards
        lines.append(f"| {where} | `{e['key']}` | {e['scenario']} | {e['units_per_run']:.3f} "
                     f"| {e['units_per_step']:.4f} | {_n(e['rate'], 0)} | {e['share']:.0%} | {e['shards_today']} "
                     f"| {_n(e['unsharded'], 0)} | {_n(per_shard, 0)} | {per_shard / PARTITION_WCU:.0%} "
                     f"| {e['shards_needed']} |")
    lines += ["", "Per-entity keys (one run's or one fan-out's partition): WCU per step of that entity "
              "(slope between the narrowest and widest window):", "",
              "| Table or index | Hottest key | Series | WCU per entity step | WCU/s if one entity took 100k steps/s "
              "| % of limit | Entity steps/s that reach 50% |", "|---|---|---|---|---|---|---|"]
    for where, e in sorted(entity.items()):
        lines.append(f"| {where} | `{e['key']}` | {e['series']} | {e['units_per_step']:.3f} "
                     f"| {_n(e['at_steps'], 0)} | {e['at_steps'] / PARTITION_WCU:.0%} "
                     f"| {_n(e['steps_per_s_to_half'], 0)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.capacity [RESULTS.json]``: the per-key extrapolation of a benchmark run."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=main.__doc__)
    parser.add_argument("results", nargs="?", type=Path, help="results JSON (default: the newest under bench/results)")
    parser.add_argument("--system", default="workflows", help="which system's windows (default workflows)")
    parser.add_argument("--shards", type=int, default=8, help="shard count of the sharded design (default 8)")
    args = parser.parse_args(argv)
    path = args.results or latest_results(Path(__file__).resolve().parent / "results")
    results = json.loads(path.read_text())["results"]
    print(f"From {path.name}:\n")
    print(capacity_tables(results, args.system, args.shards))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
