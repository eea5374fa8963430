"""A counting front for the local AWS server: every request from every process, classified.

It wraps moto's WSGI app in the moto server's own process, so it sees what any
proxy would see (every worker, beat and client request) without adding a
network hop, and it can look items up in moto's tables to size writes. It also
makes DynamoDB requests take turns: moto's threaded server does not apply
concurrent updates of one item atomically, as DynamoDB does.

Each request is counted under ``(system, role, service, operation)``:

* ``system``: the table or queue name's first ``-`` segment (each benchmarked
  system gets its own prefix, e.g. ``wfb-``, ``celb-``);
* ``role``: the ``app/<id>`` part of the User-Agent (botocore's
  ``AWS_SDK_UA_APP_ID``), ``kombu`` for kombu's own pycurl SQS client;
* ``service`` and ``operation``: from ``X-Amz-Target`` (DynamoDB and SQS JSON
  protocol) or the ``Action`` parameter (SQS query protocol).

It also counts writes per partition key, of base tables and of every GSI
(:mod:`bench.keys`): each system's hottest keys of the window come as one more
counter row, ``operation: "hot_keys"`` with zero requests and the figures under
``hot_keys``.

Each row also sums, in seconds, how long its DynamoDB requests waited for their
turn (``wait_seconds``), were served by moto (``seconds``), held the turn (``held_seconds``:
moto's service plus the front sizing the items a write touches), and slept for AWS's
latency (``added_seconds``, see below).

Control endpoints: ``GET /__bench/counts`` returns the counters as JSON, ``POST
/__bench/reset`` zeroes them (and starts a new window); ``POST /__bench/latency``
with a JSON table ``{"dynamodb.GetItem": 4.0, ...}`` (milliseconds,
:mod:`bench.aws_latency`) makes every request sleep that long before it takes its
turn, so requests overlap as on AWS (``{}``: off); ``GET /__bench/tables`` returns
the item count of every table; ``POST /__bench/clear`` with ``{"tables": [...]}``
empties those tables (a fresh stack for the next scenario: moto's Query and Scan
cost grows with the table). Run it with ``python -m bench.proxy --port N``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import threading
import time
from collections import defaultdict
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs

from . import aws_latency
from .capacity import DDB_WRITES, Sizer, item_size, request_units, write_units, writes_before
from .keys import KeyCounter

_APP_ID = re.compile(r"\bapp/([\w.\-]+)")
_SCOPE = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([\w-]+)/aws4_request")
FIELDS = ("requests", "items", "read_units", "write_units", "messages", "bytes_in", "bytes_out", "seconds",
          "wait_seconds", "held_seconds", "added_seconds")


def role_of(user_agent: str) -> str:
    """The process role a request came from (``app/<id>`` in the User-Agent)."""
    match = _APP_ID.search(user_agent or "")
    if match:
        return match.group(1)
    return "kombu" if "pycurl" in (user_agent or "").lower() or not user_agent else "other"


def system_of(resource: str | None) -> str:
    """The benchmarked system owning a table or queue (its name's first ``-`` segment)."""
    if not resource:
        return "?"
    name = resource.rsplit("/", 1)[-1]
    return name.split("-", 1)[0] if "-" in name else name


def classify(headers: dict[str, str], body: bytes, query: str = "",
             method: str = "") -> tuple[str, str, str | None, dict[str, Any]]:
    """Return ``(service, operation, resource, parsed_body)`` of one AWS request.

    ``headers`` keys are matched case-insensitively; ``method`` names an S3 request's operation.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    target = lower.get("x-amz-target", "")
    if target:
        prefix, _, operation = target.partition(".")
        service = "dynamodb" if prefix.startswith("DynamoDB") else "sqs" if prefix == "AmazonSQS" else prefix
        try:
            parsed = json.loads(body or b"{}")
        except ValueError:
            parsed = {}
        return service, operation, _resource(service, parsed), parsed
    params = {k: v[-1] for k, v in parse_qs(query).items()}
    if body and "form-urlencoded" in lower.get("content-type", ""):
        params.update({k: v[-1] for k, v in parse_qs(body.decode(errors="replace")).items()})
    if "Action" in params:
        scope = _SCOPE.search(lower.get("authorization", ""))
        service = scope.group(1) if scope else "sqs"
        return service, params["Action"], params.get("QueueUrl") or params.get("QueueName"), params
    scope = _SCOPE.search(lower.get("authorization", ""))
    if scope and scope.group(1) == "s3" and method in _S3_OPERATIONS:
        return "s3", _S3_OPERATIONS[method], None, {}
    return "other", "other", None, {}


_S3_OPERATIONS = {"GET": "GetObject", "PUT": "PutObject", "DELETE": "DeleteObject", "HEAD": "HeadObject"}


def _resource(service: str, parsed: dict[str, Any]) -> str | None:
    if service == "sqs":
        return parsed.get("QueueUrl") or parsed.get("QueueName")
    if "TableName" in parsed:
        return str(parsed["TableName"])
    if "RequestItems" in parsed:
        return next(iter(parsed["RequestItems"]), None)
    for action in parsed.get("TransactItems", []):
        for inner in action.values():
            if "TableName" in inner:
                return str(inner["TableName"])
    return None


class Counter:
    """Thread-safe counters keyed by (system, role, service, operation)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str, str, str], dict[str, float]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))

    def add(self, key: tuple[str, str, str, str], **amounts: float) -> None:
        with self._lock:
            row = self._rows[key]
            row["requests"] += 1
            for name, amount in amounts.items():
                row[name] += amount

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{"system": k[0], "role": k[1], "service": k[2], "operation": k[3], **v}
                    for k, v in sorted(self._rows.items())]

    def reset(self) -> None:
        with self._lock:
            self._rows.clear()


class CountingMiddleware:
    """WSGI middleware in front of moto that classifies and counts every request."""

    def __init__(self, app: Callable[..., Any], counter: Counter | None = None, sizer: Sizer | None = None) -> None:
        self.app, self.counter, self.sizer = app, counter or Counter(), sizer or Sizer()
        self.keys = KeyCounter()
        self.latency_ms: dict[str, float] = {}  # per ``service.Operation``: slept before the turn (AWS column)
        # DynamoDB applies each write to an item atomically; moto's threaded server does not
        # (concurrent ADDs to one counter can be lost), so DynamoDB requests take turns here.
        self._dynamodb = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/__bench/"):
            return self._control(path, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        headers = {k[5:].replace("_", "-"): v for k, v in environ.items() if k.startswith("HTTP_")}
        headers["content-type"] = environ.get("CONTENT_TYPE", "")
        service, op, resource, parsed = classify(headers, body, environ.get("QUERY_STRING", ""),
                                                 environ.get("REQUEST_METHOD", ""))
        added = aws_latency.seconds(self.latency_ms, service, op)
        if added:  # outside the turn-taking: on AWS, requests of many clients are served at once
            time.sleep(added)
        arrived = time.perf_counter()
        with self._dynamodb if service == "dynamodb" else contextlib.nullcontext():
            waited = time.perf_counter() - arrived
            before = writes_before(op, parsed, self.sizer) if service == "dynamodb" and op in DDB_WRITES else []
            items = [(table, key, self.sizer.item(table, key)) for table, key, size in before if size >= 0]
            began = time.perf_counter()
            out = b"".join(self.app(environ, start_response))
            seconds = time.perf_counter() - began
            self._count_keys(op, items)
            held = time.perf_counter() - arrived - waited  # moto's service plus the front's sizing of writes
        response: dict[str, Any] = {}
        if service in ("dynamodb", "sqs") and out[:1] == b"{":
            try:
                response = json.loads(out)
            except ValueError:
                pass
        elif service == "sqs" and op == "ReceiveMessage":  # query protocol (XML)
            response = {"Messages": [None] * out.count(b"<Message>")}
        if service != "other":
            amounts = request_units(service, op, parsed, response, before, self.sizer)
            key = (system_of(resource), role_of(headers.get("USER-AGENT", "")), service, op)
            self.counter.add(key, bytes_in=len(body), bytes_out=len(out), seconds=seconds, wait_seconds=waited,
                             held_seconds=held, added_seconds=added, **amounts)
        return [out]

    def _count_keys(self, op: str, items: list[tuple[str | None, dict | None, dict | None]]) -> None:
        """Count each item written by partition key: the table's, and every GSI's before and after."""
        factor = 2 if op == "TransactWriteItems" else 1
        for table, key, before in items:
            schema = self.sizer.schema(table)
            if table is None or schema is None:
                continue
            after = self.sizer.item(table, key)
            units = factor * write_units(max(item_size(before), item_size(after)))
            self.keys.record(system_of(table), table, schema, before, after, key, units)

    def _control(self, path: str, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        sent = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
        if path == "/__bench/reset":
            self.counter.reset()
            self.keys.reset()
            payload = b"{}"
        elif path == "/__bench/latency":
            if environ.get("REQUEST_METHOD") == "POST":
                self.latency_ms = {str(k): float(v) for k, v in sent.items()}
            payload = json.dumps(self.latency_ms).encode()
        elif path == "/__bench/tables":
            payload = json.dumps(self.sizer.item_counts()).encode()
        elif path == "/__bench/clear":
            with self._dynamodb:
                payload = json.dumps(self.sizer.clear(list(sent.get("tables", [])))).encode()
        else:
            zero = dict.fromkeys(FIELDS, 0)
            payload = json.dumps(self.counter.snapshot() + [{**zero, **row} for row in self.keys.rows()]).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        return [payload]


def serve(host: str, port: int) -> None:
    """Serve moto behind the counting middleware until killed."""
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = CountingMiddleware(DomainDispatcherApplication(create_backend_app))
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    print(f"counting AWS front on http://{host}:{server.server_address[1]}", flush=True)
    server.serve_forever()


def fetch_counts(url: str) -> list[dict[str, Any]]:
    """Return the counters of the front at ``url``."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/__bench/counts", timeout=30) as response:
        return list(json.loads(response.read()))


def reset_counts(url: str) -> None:
    """Zero the counters of the front at ``url``."""
    _post(url, "reset", {})


def set_latency(url: str, table_ms: dict[str, float]) -> None:
    """Make the front at ``url`` add ``table_ms`` (milliseconds per ``service.Operation``; ``{}``: none)."""
    _post(url, "latency", table_ms)


def table_items(url: str) -> dict[str, int]:
    """Item count of every table of the front at ``url``."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/__bench/tables", timeout=30) as response:
        return dict(json.loads(response.read()))


def clear_tables(url: str, tables: list[str]) -> dict[str, int]:
    """Empty ``tables`` on the front at ``url``; return how many items each held."""
    return dict(_post(url, "clear", {"tables": tables}))


def _post(url: str, name: str, body: dict[str, Any]) -> Any:
    """POST ``body`` to the front's control endpoint ``name``; its JSON answer."""
    import urllib.request

    request = urllib.request.Request(f"{url}/__bench/{name}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    serve(args.host, args.port)


if __name__ == "__main__":
    main()


__all__ = ["Counter", "CountingMiddleware", "classify", "clear_tables", "fetch_counts", "reset_counts", "role_of",
           "set_latency", "system_of", "table_items"]
