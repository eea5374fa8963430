"""A local AWS endpoint that fails a share of requests the way AWS does under load.

DynamoDB requests get ``ProvisionedThroughputExceededException`` or
``ThrottlingException`` (HTTP 400); SQS requests get HTTP 500 ``InternalError``.
Faults are returned before the request reaches the emulator, as a throttle is.
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any, Callable, Iterable

DDB_FAULTS = ("ProvisionedThroughputExceededException", "ThrottlingException")


class FaultInjector:
    """WSGI middleware failing ``rate`` of DynamoDB and SQS requests."""

    def __init__(self, app: Callable[..., Any], rate: float, seed: int = 7) -> None:
        self.app, self.rate = app, rate
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.injected = {"dynamodb": 0, "sqs": 0}
        self.passed = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        auth = environ.get("HTTP_AUTHORIZATION", "")
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
