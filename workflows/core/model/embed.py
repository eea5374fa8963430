"""Record data that carries an already-encoded JSON payload: the payload text is embedded
raw, not escaped into a JSON string a second time, so its stored size is its own size.

Format 2 is ``{"format":2,<meta fields>,"payload":<payload JSON text>}``. Data written
before it held the payload as a JSON *string* in a named field; it still decodes.
"""

from __future__ import annotations

import json
from typing import Any

FORMAT = 2
_HEAD = '{"format":2,'
_MARK = ',"payload":'


def embed(meta: dict[str, Any], payload: str) -> str:
    """``meta`` (flat: no object in it has a ``payload`` key) and the payload text, verbatim."""
    head = json.dumps({"format": FORMAT, **meta}, separators=(",", ":"))
    return head[:-1] + _MARK + payload + "}"


def is_embedded(data: str | None) -> bool:
    """Whether ``data`` is in format 2 (a payload embedded raw)."""
    return data is not None and data.startswith(_HEAD)


def unembed(data: str, old_field: str) -> tuple[dict[str, Any], str | None]:
    """The meta fields and the payload text of ``data``; in old data the payload is the
    JSON string in ``old_field``."""
    if data.startswith(_HEAD):
        cut = data.index(_MARK)  # a JSON string holds no raw '"', so the first mark is the field
        return json.loads(data[:cut] + "}"), data[cut + len(_MARK):-1]
    meta = json.loads(data)
    return meta, meta.pop(old_field, None)
