"""The driver's conversations with live runs: signals, updates, and hooks resumed over HTTP.

Each conversation runs in a thread of the driver's pool with a random stream of its own (seeded
by the soak's seed and the run's tag), and records what it sent and what it was answered in the
run's :class:`Entry`, for the check. A signal is sent once: a send that raised may or may not be
stored, so the check allows it at most once. An update is retried with its id until answered.
"""

from __future__ import annotations

import http.client
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from ..client import send_signal, update_run
from ..errors import UpdateFailed, UpdateRefused, UpdateRunEnded
from .ledger import true_time

#: The seconds before an approval's hook times out that the driver keeps for its POSTs; until then
#: it waits for the run to hand out the token (a recovery under the soak's kills can take minutes).
POST_MARGIN = 60.0


@dataclass
class Sent:
    """One thing the driver sent into a run, and what came of it (``ok``, an answer, or an error)."""

    payload: Any
    ok: bool
    answer: Any = None
    error: str | None = None


@dataclass
class Entry:
    """A run the driver started, and everything it sent into it."""

    kind: str
    tag: str
    run_id: str
    created: float
    start_at: float | None = None
    signals: list[Sent] = field(default_factory=list)
    updates: list[Sent] = field(default_factory=list)
    hook_statuses: list[int] = field(default_factory=list)
    hook_payload: Any = None
    notes: list[str] = field(default_factory=list)


def signal_once(entry: Entry, name: str, payload: Any) -> None:
    """Send one signal, once, recording whether the call returned."""
    try:
        send_signal(entry.run_id, name, payload)
        entry.signals.append(Sent(payload, True))
    except Exception as exc:  # the check allows a signal whose send raised at most once
        entry.signals.append(Sent(payload, False, error=f"{type(exc).__name__}: {exc}"))


def update_until_answered(entry: Entry, payload: str, tries: int = 4) -> None:
    """Send an update with a fixed id until it is answered (a retry never applies it twice)."""
    last = ""
    for _ in range(tries):
        try:
            answer = update_run(entry.run_id, "add", payload, update_id=payload, timeout=25)
            entry.updates.append(Sent(payload, True, answer=answer))
            return
        except (UpdateRefused, UpdateFailed, UpdateRunEnded) as exc:
            entry.updates.append(Sent(payload, False, error=f"{type(exc).__name__}: {exc}"))
            return
        except Exception as exc:  # a timeout or an infrastructure error: the same id again
            last = f"{type(exc).__name__}: {exc}"
            time.sleep(1.0)
    entry.updates.append(Sent(payload, False, error=last))


def feed_mailbox(entry: Entry, seed: int, signals: int, updates: int) -> None:
    """Signals and updates, interleaved, the last signal after every update."""
    rng = random.Random(f"{seed}-{entry.tag}")
    order = [("signal", i) for i in range(signals)]
    for j in range(updates):
        order.insert(min(2 * j + 1, len(order) - 1), ("update", j))
    for what, n in order:
        time.sleep(rng.uniform(0.1, 1.0))
        if what == "signal":
            signal_once(entry, "item", {"tag": entry.tag, "n": n})
        else:
            update_until_answered(entry, f"{entry.tag}-u{n}")


def maybe_go(entry: Entry, seed: int) -> None:
    """Half the races get their ``go`` signal, a moment after the start."""
    rng = random.Random(f"{seed}-{entry.tag}")
    if rng.random() < 0.5:
        time.sleep(rng.uniform(0.0, 3.0))
        signal_once(entry, "go", {"tag": entry.tag})


def post(web_url: str, path: str, body: Any) -> int:
    """POST JSON to the hook endpoint; the status, or 0 when the connection failed."""
    address = urlparse(web_url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port or 80, timeout=90)
    try:
        connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return int(response.status)
    except OSError:
        return 0
    finally:
        connection.close()


def resume_over_http(entry: Entry, web_url: str, tokens: Path, hook_timeout: float,
                     clock: Callable[[], float] = true_time, sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait for the run's token while its hook can still be resumed, resume the hook over HTTP,
    then try once more (which must be 409)."""
    deadline = entry.created + hook_timeout - POST_MARGIN
    path = tokens / entry.run_id
    while not path.exists():
        if clock() > deadline:
            entry.notes.append(f"no token was handed out in {hook_timeout - POST_MARGIN:g} s")
            return
        sleep(0.5)
    token = path.read_text()
    entry.hook_payload = {"tag": entry.tag, "approved": True}
    for _ in range(6):
        status = post(web_url, f"/hooks/{token}", entry.hook_payload)
        entry.hook_statuses.append(status)
        if status in (202, 409, 404, 410):
            break
        sleep(1.0)  # 5xx or no answer: nothing was changed, try again
    if entry.hook_statuses[-1] == 202:
        entry.hook_statuses.append(post(web_url, f"/hooks/{token}", {"tag": entry.tag, "again": True}))
