"""Run tags (search attributes): their rules, their index keys, and ``set_tags`` inside a workflow.

A run carries up to :data:`MAX_TAGS` string tags, set at start and changed from inside
its workflow by :func:`set_tags`, a durable op: its outcome record holds the run's tags
after the call, written in one transaction with the run's tags and their index items,
so a replay writes nothing again and a lost response or a duplicate resume writes once.
``list_runs(tag="key=value")`` Queries the index items of one ``key=value``, newest first.
"""

from __future__ import annotations

import json
import re
import reprlib
from typing import TYPE_CHECKING, Any, Mapping

from ...errors import InvalidTags
from ..model.records import EventRecord, OpKind, event_seq
from .listing import listing_key

if TYPE_CHECKING:
    from ..replay.context import WorkflowContext

#: The shards of every tag's index items: fixed (never a setting), since an item keeps the shard
#: it was written to. A tag item is written in a transaction (2 write units), so 64 keep a tag that
#: 10,000 runs/s carry at about 313 write units/s per key (measured: ``python -m bench.key_spread``).
TAG_SHARDS = 64
MAX_TAGS = 16
MAX_KEY_LENGTH = 64
MAX_VALUE_LENGTH = 256
#: A key: letters, digits and ``_ . : -`` (never ``=``, which separates a key from its value in a filter).
KEY_PATTERN = re.compile(r"[A-Za-z0-9_.:-]+")


def check_tag(key: Any, value: Any) -> tuple[str, str]:
    """One tag, or InvalidTags naming the key and the rule it breaks."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key) or len(key) > MAX_KEY_LENGTH:
        raise InvalidTags(f"tag key {reprlib.repr(key)} must be 1..{MAX_KEY_LENGTH} characters of letters, "
                          "digits and _ . : -")
    if not isinstance(value, str) or len(value) > MAX_VALUE_LENGTH or not value.isprintable():
        raise InvalidTags(f"tag {key!r} must have a string value of at most {MAX_VALUE_LENGTH} printable "
                          f"characters, got {reprlib.repr(value)}")
    return key, value


def check_tags(tags: Any, *, removals: bool = False) -> dict[str, Any]:
    """Validate a tag mapping (``removals``: a None value removes that key)."""
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise InvalidTags(f"tags must be a mapping of strings to strings, got {type(tags).__name__}")
    checked: dict[str, Any] = {}
    for key, value in tags.items():
        if removals and value is None:
            check_tag(key, "")
            checked[key] = None
        else:
            checked.update([check_tag(key, value)])
    return checked


def limit_count(tags: Mapping[str, str]) -> dict[str, str]:
    """``tags`` if there are at most :data:`MAX_TAGS` of them."""
    if len(tags) > MAX_TAGS:
        raise InvalidTags(f"a run carries at most {MAX_TAGS} tags, got {len(tags)}: {', '.join(sorted(tags))}")
    return dict(tags)


def parse_filter(text: Any) -> tuple[str, str]:
    """``"key=value"`` (a ``list_runs`` or CLI tag filter) as ``(key, value)``."""
    if isinstance(text, tuple) and len(text) == 2:
        return check_tag(*text)
    if not isinstance(text, str) or "=" not in text:
        raise InvalidTags(f"a tag filter is 'key=value', got {reprlib.repr(text)}")
    key, _, value = text.partition("=")
    return check_tag(key, value)


def tag_text(key: str, value: str) -> str:
    """A tag as one text, ``key=value``: what ``list_runs(tag=...)`` looks up."""
    return f"{key}={value}"


def index_key(key: str, value: str, run_id: str) -> str:
    """The partition key of a run's index item for one tag, ``key=value#<k>`` with ``k`` one of
    :data:`TAG_SHARDS`: a tag every run carries spreads its writes over them, and
    ``list_runs(tag=...)`` Queries them all and merges them newest first (``core.storage.listing``)."""
    return listing_key(tag_text(key, value), run_id, TAG_SHARDS)


def index_sort_key(created_at: float, run_id: str) -> str:
    """The sort key of a run's index item: creation time (fixed width, so text order is time order), id."""
    return f"{created_at:020.6f}#{run_id}"


def index_bound(at: float) -> str:
    """A sort-key bound at time ``at`` (for ``since``/``until``)."""
    return f"{at:020.6f}"


def tags_at(ctx: WorkflowContext, pos: int) -> dict[str, str]:
    """The run's tags before op ``pos``: the last ``set_tags`` outcome before it, else the run's own.

    The run is read before its history, so a run whose tags a ``set_tags`` changed shows
    that op's outcome in the history; with none before ``pos``, the run's tags are its start tags.
    """
    earlier = [e for p, e in ctx.history.outcomes.items() if p < pos and e.kind == OpKind.TAGS.value]
    if earlier:
        return dict(json.loads(max(earlier, key=lambda e: e.seq).data or "{}"))
    return dict(ctx.run.tags or {})


def set_tags(ctx: WorkflowContext, changes: Mapping[str, str | None]) -> dict[str, str]:
    """Merge ``changes`` into the run's tags (a None value removes a key); return the tags after.

    One op: its outcome, the run's tags and the index items it moves are one transaction
    (only while the run is live), so a replay returns the recorded tags and writes nothing.
    """
    checked = check_tags(changes, removals=True)
    pos, event = ctx.next_op(OpKind.TAGS, None)
    if event is None:
        before = tags_at(ctx, pos)
        after = {k: v for k, v in {**before, **checked}.items() if v is not None}
        limit_count(after)
        event = EventRecord(run_id=ctx.run.run_id, seq=event_seq(pos), kind=OpKind.TAGS.value, status="set",
                            at=ctx.now(), data=json.dumps(after, sort_keys=True, separators=(",", ":")))
        if not ctx.store.set_tags(event, ctx.run, before, after):
            existing = ctx.store.get_outcome(ctx.run.run_id, pos)
            if existing is None:
                raise ctx.stopped("the run has ended")
            event = existing
        ctx.history.add(event)
        ctx.engine.cache.remember(event)
    return dict(json.loads(event.data or "{}"))


def current_tags(ctx: WorkflowContext) -> dict[str, str]:
    """The run's tags as its replay has reached them (for a continue-as-new successor)."""
    return tags_at(ctx, ctx.pos)


def moved(before: Mapping[str, str], after: Mapping[str, str], run_id: str) -> tuple[list[str], list[str]]:
    """The index partition keys a change of a run's tags removes and adds."""
    gone = [index_key(k, v, run_id) for k, v in sorted(before.items()) if after.get(k) != v]
    added = [index_key(k, v, run_id) for k, v in sorted(after.items()) if before.get(k) != v]
    return gone, added
