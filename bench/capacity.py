"""DynamoDB billing units and SQS message counts of one request, as AWS on-demand would bill them.

Item sizes follow DynamoDB's rules (attribute names plus values); a write is billed
on the larger of the item before and after it, so the counting front looks the
item up in moto's in-process tables around each write. Transactions cost double.
"""

from __future__ import annotations

import json
import math
from typing import Any

from workflows.core.metering import DDB_READS, DDB_WRITES  # noqa: F401 - the bench's modules import them here


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
