"""What a deployment is made of: every table (keys, indexes, TTL) and every queue (redrive).

Tables are read from the PynamoDB models (the schema ``create_table`` sends), so the
CloudFormation template and ``workflows init-aws`` create the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from persistence.models import build_models
from persistence.provision import BASE_QUEUES, DLQ
from workflows.settings import SQS_MAX_MESSAGE_BYTES, Settings

#: Deliveries of one message before SQS moves it to the dead-letter queue. A message is
#: received again only when a worker died or shut down holding it, so ten is far above normal.
MAX_RECEIVE_COUNT = 10
#: Dead letters are kept for the longest time SQS allows (14 days), to be looked at.
MAX_MESSAGE_BYTES = SQS_MAX_MESSAGE_BYTES  # every queue takes SQS's largest message
DLQ_RETENTION_SECONDS = 14 * 24 * 3600
BILLING_MODE = "PAY_PER_REQUEST"


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index: name, key (hash, range), projection."""

    name: str
    hash_key: str
    range_key: str | None
    projection: str
    non_key_attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    """A table: its short name (without prefix), key, attribute types, indexes, TTL attribute."""

    name: str
    hash_key: str
    range_key: str | None
    attribute_types: tuple[tuple[str, str], ...]
    indexes: tuple[IndexSpec, ...]
    ttl_attribute: str | None = None


@dataclass(frozen=True)
class QueueSpec:
    """A queue: its short name, and whether it is the dead-letter queue the others redrive to."""

    name: str
    dead_letter: bool = False


def _keys(schema: Iterable[dict[str, str]]) -> tuple[str, str | None]:
    by_type = {k["KeyType"]: k["AttributeName"] for k in schema}
    return by_type["HASH"], by_type.get("RANGE")


def _ttl_attribute(model: Any) -> str | None:
    from pynamodb.attributes import TTLAttribute

    found = [attr.attr_name for attr in model.get_attributes().values() if isinstance(attr, TTLAttribute)]
    return found[0] if found else None


def table_spec(model: Any, prefix: str) -> TableSpec:
    """The spec of one PynamoDB model class, from the schema its ``create_table`` sends."""
    schema = model._get_schema()  # what Model.create_table sends, so both paths agree
    if schema.get("local_secondary_indexes"):
        raise NotImplementedError(f"{model.Meta.table_name}: local secondary indexes are not supported")
    indexes = []
    for index in sorted(schema.get("global_secondary_indexes", []), key=lambda i: i["index_name"]):
        hash_key, range_key = _keys(index["key_schema"])
        projection = index["projection"]
        indexes.append(IndexSpec(index["index_name"], hash_key, range_key, projection["ProjectionType"],
                                 tuple(projection.get("NonKeyAttributes", ()))))
    hash_key, range_key = _keys(schema["key_schema"])
    types = sorted({(a["AttributeName"], a["AttributeType"]) for a in schema["attribute_definitions"]})
    name = str(model.Meta.table_name)
    if not name.startswith(prefix):
        raise ValueError(f"table {name!r} does not start with the prefix {prefix!r}")
    return TableSpec(name[len(prefix):], hash_key, range_key, tuple(types), tuple(indexes), _ttl_attribute(model))


def table_specs(settings: Settings) -> list[TableSpec]:
    """Every table of a deployment, in creation order."""
    return [table_spec(model, settings.table_prefix) for model in build_models(settings).all()]


def queue_specs(extra: Iterable[str] = ()) -> list[QueueSpec]:
    """Every queue: resumes, steps, each step's ``queue=`` in ``extra``, and the dead-letter queue."""
    names = [n for n in dict.fromkeys([*BASE_QUEUES, *extra]) if n != DLQ]
    return [QueueSpec(DLQ, dead_letter=True), *(QueueSpec(n) for n in names)]
