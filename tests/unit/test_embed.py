"""Payload text embedded raw in record data, and data of the older escaped format."""

from __future__ import annotations

import json

from workflows.core.model.embed import embed, unembed


def test_payload_text_is_embedded_verbatim_and_read_back() -> None:
    payload = json.dumps(["", '"', ',"payload":', {"payload": "x"}], separators=(",", ":"))
    meta = {"key": 'a,"payload":"b', "n": 2, "branch": {"join": "r#1", "index": 0}, "none": None}
    data = embed(meta, payload)
    assert payload in data and len(data) < len(payload) + 120
    assert json.loads(data)["payload"] == json.loads(payload)  # still JSON for tools
    assert unembed(data, "payload") == ({"format": 2, **meta}, payload)


def test_data_of_the_escaped_format_still_decodes() -> None:
    payload = '[""]'
    assert unembed(json.dumps({"key": "k", "payload": payload}), "payload") == ({"key": "k"}, payload)
    assert unembed(json.dumps({"step": "s", "attempt": 2, "args": payload}), "args") == (
        {"step": "s", "attempt": 2}, payload)


def test_many_empty_strings_cost_their_own_size() -> None:
    payload = json.dumps([""] * 85_000, separators=(",", ":"))
    assert len(embed({"key": "items#00000000000000000001#abcd"}, payload)) < len(payload) + 100
