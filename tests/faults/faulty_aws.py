"""A local AWS endpoint that fails a share of requests the way AWS does under load.

DynamoDB requests get ``ProvisionedThroughputExceededException`` or
``ThrottlingException`` (HTTP 400); SQS requests get HTTP 500 ``InternalError``.
Faults are returned before the request reaches the emulator, as a throttle is.

:meth:`FaultInjector.lose_response` arms a different fault: the request is applied,
then its response is replaced by HTTP 500, so the SDK retries a request that already
took effect (the retry then fails its condition).
"""

from __future__ import annotations

import io
import json
import random
import threading
from typing import Any, Callable, Iterable

DDB_FAULTS = ("ProvisionedThroughputExceededException", "ThrottlingException")
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"})


class FaultInjector:
    """WSGI middleware failing ``rate`` of DynamoDB and SQS requests."""

    def __init__(self, app: Callable[..., Any], rate: float, seed: int = 7) -> None:
        self.app, self.rate = app, rate
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.injected = {"dynamodb": 0, "sqs": 0}
        self.passed = 0
        self.lost: list[tuple[str, str, int]] = []  # armed: (target suffix, text in body, times)
        self.responses_lost = 0

    def lose_response(self, operation: str, body_contains: str, times: int = 1) -> None:
        """Apply the next ``times`` DynamoDB ``operation`` requests (``"write"``: any write)
        whose body contains ``body_contains`` (e.g. a table name); answer each with HTTP 500."""
        with self.lock:
            self.lost.append((operation, body_contains, times))

    def _take_loss(self, target: str, body: bytes) -> bool:
        with self.lock:
            for i, (operation, text, times) in enumerate(self.lost):
                name = target.rsplit(".", 1)[-1]
                matches = name in WRITES if operation == "write" else name == operation
                if matches and text.encode() in body:
                    self.lost[i] = (operation, text, times - 1)
                    if times - 1 == 0:
                        del self.lost[i]
                    self.responses_lost += 1
                    return True
        return False

    def _apply_and_lose(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        for _chunk in self.app(environ, lambda *args, **kwargs: None):  # the emulator applies the request
            pass
        body = json.dumps({"__type": "com.amazon.coral.service#InternalFailure", "message": "response lost"})
        start_response("500 Internal Server Error", [("Content-Type", "application/x-amz-json-1.0")])
        return [body.encode()]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        auth = environ.get("HTTP_AUTHORIZATION", "")
        if self.lost and target.startswith("DynamoDB"):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length)
            environ["wsgi.input"] = io.BytesIO(body)
            if self._take_loss(target, body):
                return self._apply_and_lose(environ, start_response)
        service = "dynamodb" if target.startswith("DynamoDB") else "sqs" if "/sqs/" in auth else None
        with self.lock:
            fail = service is not None and self.random.random() < self.rate
            if fail:
                self.injected[service] += 1  # type: ignore[index]
            else:
                self.passed += 1
        if not fail:
            return self.app(environ, start_response)
        if service == "dynamodb":
            kind = self.random.choice(DDB_FAULTS)
            body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{kind}", "message": "injected"})
            start_response("400 Bad Request", [("Content-Type", "application/x-amz-json-1.0")])
        else:
            body = json.dumps({"__type": "InternalError", "message": "injected"})
            start_response("500 Internal Server Error", [("Content-Type", "application/x-amz-json-1.0")])
        return [body.encode()]


class FaultyAWS:
    """The emulator behind a :class:`FaultInjector`, served on a free port in a thread."""

    def __init__(self, rate: float) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        self.injector = FaultInjector(DomainDispatcherApplication(create_backend_app), rate)
        self.server = make_server("127.0.0.1", 0, self.injector, threaded=True, request_handler=MotoRequestHandler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
