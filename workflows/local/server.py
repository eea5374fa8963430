"""An embedded local AWS (DynamoDB + SQS) for tests, demos and development."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
import weakref
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from typing import Self

START_DEADLINE = 10.0
#: Seconds a stop may take before the process goes on without it (see LocalAWS.stop).
STOP_DEADLINE = 10.0
log = logging.getLogger("workflows.local")
INSTALL_HINT = "the local AWS emulator needs moto: pip install 'moto[server]'"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _can_bind(host: str, port: int) -> bool:
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError:
        return False
    return True


class LiveInstances:
    """A moto model's ``instances_tracked``, holding its instances weakly: the live ones only.

    moto appends every instance of every model it ever creates to a list on its class
    (for the ``/moto-api/data.json`` dashboard), and never removes one. That kept every
    DynamoDB item ever written or read (a read returns a copy), every deleted SQS
    message, every overwritten S3 object and, the most by far, a deep copy of the whole
    table for each item of every ``TransactWriteItems`` (moto copies it to roll back on
    failure): memory grew with table size times transactions.
    """

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def append(self, instance: Any) -> None:
        key = id(instance)

        def forget(ref: weakref.ref[Any]) -> None:
            if self._refs.get(key) is ref:
                del self._refs[key]

        try:
            self._refs[key] = weakref.ref(instance, forget)
        except TypeError:
            pass  # not weakly referenceable: not listed rather than kept forever

    def __iter__(self) -> Iterator[Any]:
        return iter([instance for ref in list(self._refs.values()) if (instance := ref()) is not None])

    def __len__(self) -> int:
        return len(self._refs)


def track_live_models_only() -> None:
    """Make moto's model registry forget instances nothing else holds (idempotent).

    Patches ``BaseModel.__new__`` (moto 5) to record each instance in a
    :class:`LiveInstances` rather than a list, and converts the lists already made; a
    list put back by moto's ``/moto-api/reset`` is converted on its class's next instance.
    """
    from moto.core.common_models import BaseModel

    def live(cls: type) -> LiveInstances:
        tracked = cls.__dict__.get("instances_tracked")
        if isinstance(tracked, LiveInstances):
            return tracked
        converted = LiveInstances()
        for instance in tracked or ():
            converted.append(instance)
        cls.instances_tracked = converted  # type: ignore[attr-defined]
        return converted

    if getattr(BaseModel.__new__, "live_only", False):
        return

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        instance = super(BaseModel, cls).__new__(cls)  # type: ignore[misc]
        live(cls).append(instance)
        return instance

    new.live_only = True  # type: ignore[attr-defined]
    BaseModel.__new__ = new  # type: ignore[method-assign, assignment]
    classes = BaseModel.__subclasses__()
    while classes:
        cls = classes.pop()
        live(cls)
        classes.extend(cls.__subclasses__())


def _serialized_server(base: Any) -> Any:
    """The moto server class, with its DynamoDB requests applied one at a time.

    DynamoDB applies a conditional write or a transaction atomically; moto does not
    lock, so two concurrent transactions with one condition can both succeed. One lock
    around every DynamoDB request gives the emulator DynamoDB's isolation.
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from moto.server import MotoRequestHandler
    from werkzeug.serving import make_server

    lock = threading.Lock()

    def serialized(app: Any) -> Any:
        def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
            if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
                return app(environ, start_response)
            with lock:
                result = app(environ, start_response)
                try:
                    return [b"".join(result)]
                finally:
                    getattr(result, "close", lambda: None)()
        return wsgi

    class SerializedMotoServer(base):  # type: ignore[misc, valid-type]
        def _server_entry(self) -> None:
            app = serialized(DomainDispatcherApplication(create_backend_app))
            self._server = make_server(self._ip_address, self._port, app, True, request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return SerializedMotoServer


class LocalAWS:
    """A moto server in a background thread, usable as a context manager.

    Args:
        host: address to listen on.
        port: port to listen on; ``None`` picks a free one.
    """

    def __init__(self, host: str = "127.0.0.1", port: int | None = None) -> None:
        self.host = host
        self.port = port
        self._server: Any = None

    @property
    def url(self) -> str:
        """The endpoint URL, e.g. ``http://127.0.0.1:5000``."""
        if self.port is None:
            raise RuntimeError("LocalAWS is not started")
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def start(self) -> Self:
        """Start the server (importing moto now) and wait until it answers HTTP.

        Raises:
            ConfigurationError: moto is not installed, or the server did not come up.
        """
        if self._server is not None:
            return self
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as exc:
            raise ConfigurationError(INSTALL_HINT) from exc
        track_live_models_only()
        if self.port and not _can_bind(self.host, self.port):
            raise ConfigurationError(f"local AWS cannot listen on {self.host}:{self.port}: in use")
        if logging.getLogger("werkzeug").level == logging.NOTSET:
            logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no per-request lines
        server = _serialized_server(ThreadedMotoServer)(ip_address=self.host, port=self.port or 0, verbose=False)
        # moto's start() waits forever if the port cannot be bound; bound it with a deadline.
        starter = threading.Thread(target=server.start, name="local-aws-start", daemon=True)
        starter.start()
        starter.join(START_DEADLINE)
        if starter.is_alive():
            raise ConfigurationError(f"local AWS could not listen on {self.host}:{self.port}")
        self._server = server
        self.port = int(server.get_host_and_port()[1])
        deadline = time.monotonic() + START_DEADLINE
        while not self._answers():
            if time.monotonic() > deadline:
                self.stop()
                raise ConfigurationError(f"local AWS at {self.url} did not answer in time")
            time.sleep(0.05)
        return self

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(f"{self.url}/", timeout=1).close()  # cheap; data.json dumps all state
            return True
        except urllib.error.HTTPError:
            return True  # any HTTP answer means the server is up
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server; does nothing if it is not running. A stop that has not finished after
        ``STOP_DEADLINE`` seconds is left to finish on its own (its threads are daemons): a process
        stopping on a signal exits rather than wait on it."""
        server, self._server = self._server, None
        if server is not None:
            stopper = threading.Thread(target=server.stop, name="local-aws-stop", daemon=True)
            stopper.start()
            stopper.join(STOP_DEADLINE)
            if stopper.is_alive():
                log.warning("local AWS did not stop within %ss; leaving it to the process's exit", STOP_DEADLINE)

    def reset(self) -> None:
        """Delete every table, queue and message held by the server."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", data=b"", method="POST")
        urllib.request.urlopen(request, timeout=10).close()

    def environ(self, region: str = "us-east-1") -> dict[str, str]:
        """Return environment variables that point the AWS SDK at this server.

        Args:
            region: value of ``AWS_DEFAULT_REGION``.
        """
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ENDPOINT_URL_DYNAMODB": self.url,
            "AWS_ENDPOINT_URL_SQS": self.url,
            "AWS_DEFAULT_REGION": region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Terminated(Exception):
    """SIGTERM arrived: :func:`serve_forever` stops as it does on Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one while stopping changes nothing
    raise _Terminated


def serve_forever(host: str = "127.0.0.1", port: int | None = None, enforce_iam: bool = False) -> None:
    """Run a local AWS in the foreground until Ctrl-C or SIGTERM, printing the env to export.

    SIGTERM (``docker stop``, ECS, Kubernetes) stops the server as Ctrl-C does and returns
    normally. Without a handler a container's main process would not stop at all: the
    kernel ignores a signal the process with PID 1 has left at its default action.

    Args:
        host: address to listen on.
        port: port to listen on; ``None`` picks a free one.
        enforce_iam: enforce IAM on every request (:mod:`workflows.local.iam`); only
            users created through the IAM API can then sign requests.
    """
    handles_sigterm = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if handles_sigterm else None
    try:
        if enforce_iam:
            from .iam import enforce_in_this_process

            enforce_in_this_process()
        with contextlib.suppress(KeyboardInterrupt, _Terminated), LocalAWS(host, port) as aws:
            exports = " ".join(f"{key}={value}" for key, value in aws.environ().items())
            print(f"local AWS at {aws.url} (Ctrl-C to stop); export {exports}", flush=True)
            while True:
                time.sleep(3600)
    finally:
        if handles_sigterm:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    print("local AWS stopped", flush=True)
