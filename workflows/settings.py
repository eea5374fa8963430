"""The one typed settings object; nothing else reads the environment."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Mapping
from urllib.parse import quote, urlparse

from .errors import ConfigurationError

DYNAMODB_ITEM_LIMIT = 400 * 1024
#: The largest payload kept inline in a DynamoDB item (``payload_threshold_bytes`` at most this).
MAX_INLINE_PAYLOAD = DYNAMODB_ITEM_LIMIT - 16 * 1024
#: The documented maximum of ``max_payload_bytes``: payloads above the threshold go to S3, and
#: a worker holds a payload whole in memory (and its encoding), so tens of MB is the sane end.
MAX_PAYLOAD_LIMIT = 32 * 1024 * 1024
#: SQS's largest message (1 MiB), set on every queue: a queue's own limit defaults lower (256 KiB
#: in the API reference), below a message carrying a payload held inline up to the threshold
#: (256 KiB), which kombu sends base64-encoded (4/3 of its size) in a JSON envelope.
SQS_MAX_MESSAGE_BYTES = 1024 * 1024
#: botocore retries for SQS calls: throttles and 5xx are retried with backoff, up to 10 attempts.
SQS_RETRIES = {"mode": "standard", "max_attempts": 10}
MIN_HOOK_SECRET_BYTES = 32
MIN_DASHBOARD_TOKEN_BYTES = 16
#: How long an ended run's items are kept by default (``WORKFLOWS_RETENTION``), and the shortest retention.
DEFAULT_RETENTION_SECONDS = 30 * 86400.0
MIN_RETENTION_SECONDS = 3600.0
#: The retention horizon by default (``WORKFLOWS_RETENTION_HORIZON``): see docs/retention.md.
DEFAULT_RETENTION_HORIZON_SECONDS = 14 * 86400.0
#: The shard count of every write-sharded index key (``WORKFLOWS_INDEX_SHARDS``), and its largest value.
DEFAULT_INDEX_SHARDS = 8
MAX_INDEX_SHARDS = 1024


@dataclass(frozen=True)
class Settings:
    """Deployment settings, read from the environment by :meth:`from_env`.

    Attributes:
        region: AWS region (``AWS_DEFAULT_REGION``).
        endpoint_url: one endpoint for every service, for a local stack (``AWS_ENDPOINT_URL``).
        dynamodb_endpoint: DynamoDB endpoint (``AWS_ENDPOINT_URL_DYNAMODB``, else ``endpoint_url``).
        sqs_endpoint: SQS endpoint (``AWS_ENDPOINT_URL_SQS``, else ``endpoint_url``).
        table_prefix: prefix of every table name (``WORKFLOWS_TABLE_PREFIX``).
        queue_prefix: prefix of every queue name (``WORKFLOWS_QUEUE_PREFIX``).
        imports: modules that define workflows (``WORKFLOWS_IMPORTS``, comma-separated).
        sweep_interval: seconds between beat sweeps of timers and schedules
            (``WORKFLOWS_SWEEP_INTERVAL``).
        lease_seconds: a run lease; past it the reconciler resumes the run
            (``WORKFLOWS_LEASE_SECONDS``).
        visibility_timeout: SQS visibility timeout of step queues, seconds
            (``WORKFLOWS_VISIBILITY_TIMEOUT``); longer than the longest step timeout.
        max_payload_bytes: largest encoded argument, result or payload
            (``WORKFLOWS_MAX_PAYLOAD_BYTES``, default 256 KB, at most 32 MiB); larger ones are
            refused with ``PayloadTooLarge`` before anything is stored.
        payload_threshold_bytes: payloads whose encoding is longer go to the payload bucket, and
            DynamoDB items and SQS messages hold a small reference instead
            (``WORKFLOWS_PAYLOAD_THRESHOLD_BYTES``, default 256 KB, at most 384 KB).
        payload_bucket: the S3 bucket of large payloads (``WORKFLOWS_PAYLOAD_BUCKET``, default
            the table prefix followed by ``payloads``, lower-cased).
        payload_expiry_days: the bucket's lifecycle rule deletes an ended run's objects this many
            days after beat's retention sweep marked them ended (``WORKFLOWS_PAYLOAD_EXPIRY_DAYS``;
            default None: the retention in whole days, so they go with the run's items; at least
            that). A live run's objects never expire. See docs/payloads.md.
        s3_endpoint: S3 endpoint (``AWS_ENDPOINT_URL_S3``, else ``endpoint_url``).
        max_recovery_attempts: counted recoveries of one run before it fails: a recovery counts
            only when a worker took the previous one and died with the run; time waiting in a
            queue never counts (``WORKFLOWS_MAX_RECOVERY_ATTEMPTS``; see ``core.storage.recovery``).
        poll_wait_seconds: SQS long-poll wait of workers (``WORKFLOWS_POLL_WAIT_SECONDS``).
        priority_share: how many free worker slots a queue yields in a row to a higher level's
            queue waiting for one before it takes one itself (``WORKFLOWS_PRIORITY_SHARE``; 0:
            strict order, a backlog of high work starves the lower levels). See docs/celery.md.
        batch_rate: the runs per second a batch operation acts on unless it is given its own rate
            (``WORKFLOWS_BATCH_RATE``, default 20; see docs/guide.md, batch operations).
        in_place_seconds: how long a worker task may go on running a run's next steps
            itself, without a broker hop, when they go to a queue it consumes
            (``WORKFLOWS_IN_PLACE_SECONDS``; 0 sends every step as a message).
        hook_secret: the key that hook tokens are derived from (``WORKFLOWS_HOOK_SECRET``,
            at least 32 bytes). A secret: set it identically on every worker, never log it;
            needed by any process that runs workflows creating hooks.
        dashboard_token: the credential of the web dashboard (``WORKFLOWS_DASHBOARD_TOKEN``, at
            least 16 bytes). A secret; the dashboard is off while it is unset.
        log_format: ``text`` (the handler's own line, followed by the run fields) or ``json``
            (one object a line) (``WORKFLOWS_LOG_FORMAT``).
        metrics: record Prometheus metrics (``WORKFLOWS_METRICS=1``; implied by a metrics port).
            Needs the ``metrics`` extra.
        metrics_port: the port a worker or beat serves ``/metrics`` on (``WORKFLOWS_METRICS_PORT``).
        traces: OpenTelemetry tracing (``WORKFLOWS_TRACES``): ``otel`` (the process's tracer
            provider, or else one exporting over OTLP/HTTP as the standard ``OTEL_*`` variables say),
            ``file:PATH`` (spans as JSON lines appended to PATH), unset: off. Needs the ``otel`` extra.
        retention: how long an ended run, its history, joins, hooks, signals, tag index items
            and idempotency guard are kept after its end before DynamoDB's TTL deletes them
            (``WORKFLOWS_RETENTION``: a duration such as ``30d``, at least ``1h``; ``off`` keeps
            them forever). Default 30 days. See docs/retention.md.
        retention_horizon: a run's history and join items are written to expire this long plus
            the retention after the write, and beat keeps a live run's items alive every half of
            it, so a run that ends within it needs no stamping of those items
            (``WORKFLOWS_RETENTION_HORIZON``, a duration, at least ``2h``; default 14 days).
        code_version: the version of the workflow code this process runs (``WORKFLOWS_CODE_VERSION``,
            e.g. a release tag or commit). Every run is stamped with the version of the process that
            started it; unset, the stamp is ``src-`` and a hash of the workflow function's source.
        serve_versions: the run versions this worker resumes (``WORKFLOWS_SERVE_VERSIONS``,
            comma-separated); a run stamped with another version is deferred to a worker that
            serves it. Empty (the default): every version.
        defer_seconds: how long a run this worker cannot serve (unknown workflow, version not
            served) waits before another resume (``WORKFLOWS_DEFER_SECONDS``); after 10 deferrals in
            a row each one doubles the wait, up to ``defer_max_seconds``.
        defer_max_seconds: the longest wait between two tries of a deferred run
            (``WORKFLOWS_DEFER_MAX_SECONDS``, default 3600: one hour; below ``defer_seconds``,
            ``defer_seconds`` is the cap). See docs/versioning.md.
        index_shards: the shard count of every write-sharded index key: the lease, due-timer and
            retention indexes and the status and workflow listing indexes (``WORKFLOWS_INDEX_SHARDS``,
            default 8, at most 1024). A deploy-time setting, the same on every process: it may only
            be raised, never lowered (items in shards at or above a lowered count would not be read).
            See docs/architecture.md, "Sharded index keys".
        web_body_timeout: seconds a web request (the dashboard's forms, the hook endpoint) has to
            send its whole body (``WORKFLOWS_WEB_BODY_TIMEOUT``, default 10); a slower one is answered
            408 and its connection closed.
        web_max_connections: connections ``workflows web`` serves at once (``WORKFLOWS_WEB_MAX_CONNECTIONS``,
            default 100; uvicorn's ``limit_concurrency``); one more is answered 503.
        web_trusted_proxies: the addresses whose ``X-Forwarded-For`` / ``X-Forwarded-Proto``
            ``workflows web`` believes (``WORKFLOWS_WEB_TRUSTED_PROXIES``, comma-separated addresses
            or networks, default none: every client is the address that connected, so a forged
            header cannot walk around the sign-in limit). Name your load balancer's addresses.
        access_key_id / secret_access_key: taken from the standard AWS variables when set;
            otherwise boto3's credential chain applies.
    """

    region: str = "us-east-1"
    endpoint_url: str | None = None
    dynamodb_endpoint: str | None = None
    sqs_endpoint: str | None = None
    table_prefix: str = "workflows-"
    queue_prefix: str = "workflows-"
    imports: tuple[str, ...] = ()
    sweep_interval: float = 5.0
    lease_seconds: float = 300.0
    visibility_timeout: int = 1800
    max_payload_bytes: int = 256 * 1024
    payload_threshold_bytes: int = 256 * 1024
    payload_bucket: str | None = None
    payload_expiry_days: int | None = None
    s3_endpoint: str | None = None
    max_recovery_attempts: int = 10
    poll_wait_seconds: int = 1
    priority_share: int = 8
    in_place_seconds: float = 10.0
    batch_rate: float = 20.0
    hook_secret: str | None = field(default=None, repr=False)
    dashboard_token: str | None = field(default=None, repr=False)
    log_format: str = "text"
    metrics: bool = False
    metrics_port: int | None = None
    traces: str | None = None
    retention: float | None = DEFAULT_RETENTION_SECONDS
    retention_horizon: float = DEFAULT_RETENTION_HORIZON_SECONDS
    code_version: str | None = None
    serve_versions: tuple[str, ...] = ()
    defer_seconds: float = 30.0
    defer_max_seconds: float = 3600.0
    index_shards: int = DEFAULT_INDEX_SHARDS
    web_body_timeout: float = 10.0
    web_max_connections: int = 100
    web_trusted_proxies: tuple[str, ...] = ()
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.max_payload_bytes <= 0 or self.max_payload_bytes > MAX_PAYLOAD_LIMIT:
            raise ConfigurationError(
                f"max_payload_bytes must be in 1..{MAX_PAYLOAD_LIMIT}, got {self.max_payload_bytes}"
            )
        if self.payload_threshold_bytes <= 0 or self.payload_threshold_bytes > MAX_INLINE_PAYLOAD:
            raise ConfigurationError(
                f"payload_threshold_bytes must be in 1..{MAX_INLINE_PAYLOAD}, got {self.payload_threshold_bytes}"
            )
        if self.payload_expiry_days is not None and self.payload_expiry_days < self.retention_days:
            raise ConfigurationError(
                f"WORKFLOWS_PAYLOAD_EXPIRY_DAYS must be at least {self.retention_days} (the retention, "
                f"WORKFLOWS_RETENTION, in whole days), got {self.payload_expiry_days}: an ended run's payload "
                "objects must not expire before its items")
        for name in ("sweep_interval", "lease_seconds", "visibility_timeout", "defer_seconds", "web_body_timeout",
                     "web_max_connections", "defer_max_seconds"):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"{name} must be positive, got {getattr(self, name)}")
        if self.hook_secret is not None and len(self.hook_secret.encode()) < MIN_HOOK_SECRET_BYTES:
            raise ConfigurationError(f"WORKFLOWS_HOOK_SECRET must be at least {MIN_HOOK_SECRET_BYTES} bytes "
                                     "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
        if self.dashboard_token is not None and len(self.dashboard_token.encode()) < MIN_DASHBOARD_TOKEN_BYTES:
            raise ConfigurationError(f"WORKFLOWS_DASHBOARD_TOKEN must be at least {MIN_DASHBOARD_TOKEN_BYTES} bytes "
                                     "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
        if self.priority_share < 0:
            raise ConfigurationError(f"WORKFLOWS_PRIORITY_SHARE must be 0 or more, got {self.priority_share}")
        if self.log_format not in ("text", "json"):
            raise ConfigurationError(f"WORKFLOWS_LOG_FORMAT must be 'text' or 'json', got {self.log_format!r}")
        if self.traces is not None and self.traces != "otel" and not self.traces.startswith("file:"):
            raise ConfigurationError(f"WORKFLOWS_TRACES must be 'otel' or 'file:PATH', got {self.traces!r}")
        if self.retention is not None and not self.retention >= MIN_RETENTION_SECONDS:
            raise ConfigurationError(f"WORKFLOWS_RETENTION must be at least 1h (or 'off'), got {self.retention} s")
        if not self.retention_horizon >= 2 * MIN_RETENTION_SECONDS:
            raise ConfigurationError(f"WORKFLOWS_RETENTION_HORIZON must be at least 2h, got {self.retention_horizon} s")
        if isinstance(self.index_shards, bool) or not isinstance(self.index_shards, int) or not (
                1 <= self.index_shards <= MAX_INDEX_SHARDS):
            raise ConfigurationError(f"WORKFLOWS_INDEX_SHARDS must be a whole number in 1..{MAX_INDEX_SHARDS}, "
                                     f"got {self.index_shards!r}")
        if not self.batch_rate > 0:
            raise ConfigurationError(f"batch_rate must be positive, got {self.batch_rate}")
        if not self.in_place_seconds >= 0:
            raise ConfigurationError(f"in_place_seconds must be 0 or more, got {self.in_place_seconds}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from environment variables (``os.environ`` by default)."""
        env = os.environ if env is None else env
        endpoint = env.get("AWS_ENDPOINT_URL") or None
        try:
            return cls(
                region=env.get("AWS_DEFAULT_REGION") or env.get("AWS_REGION") or "us-east-1",
                endpoint_url=endpoint,
                dynamodb_endpoint=env.get("AWS_ENDPOINT_URL_DYNAMODB") or endpoint,
                sqs_endpoint=env.get("AWS_ENDPOINT_URL_SQS") or endpoint,
                table_prefix=env.get("WORKFLOWS_TABLE_PREFIX", "workflows-"),
                queue_prefix=env.get("WORKFLOWS_QUEUE_PREFIX", "workflows-"),
                imports=tuple(m.strip() for m in env.get("WORKFLOWS_IMPORTS", "").split(",") if m.strip()),
                sweep_interval=float(env.get("WORKFLOWS_SWEEP_INTERVAL", "5")),
                lease_seconds=float(env.get("WORKFLOWS_LEASE_SECONDS", "300")),
                visibility_timeout=int(env.get("WORKFLOWS_VISIBILITY_TIMEOUT", "1800")),
                max_payload_bytes=int(env.get("WORKFLOWS_MAX_PAYLOAD_BYTES", str(256 * 1024))),
                payload_threshold_bytes=int(env.get("WORKFLOWS_PAYLOAD_THRESHOLD_BYTES", str(256 * 1024))),
                payload_bucket=env.get("WORKFLOWS_PAYLOAD_BUCKET") or None,
                payload_expiry_days=int(env["WORKFLOWS_PAYLOAD_EXPIRY_DAYS"])
                if env.get("WORKFLOWS_PAYLOAD_EXPIRY_DAYS") else None,
                s3_endpoint=env.get("AWS_ENDPOINT_URL_S3") or endpoint,
                max_recovery_attempts=int(env.get("WORKFLOWS_MAX_RECOVERY_ATTEMPTS", "10")),
                poll_wait_seconds=int(env.get("WORKFLOWS_POLL_WAIT_SECONDS", "1")),
                priority_share=int(env.get("WORKFLOWS_PRIORITY_SHARE", "8")),
                in_place_seconds=float(env.get("WORKFLOWS_IN_PLACE_SECONDS", "10")),
                batch_rate=float(env.get("WORKFLOWS_BATCH_RATE", "20")),
                hook_secret=env.get("WORKFLOWS_HOOK_SECRET") or None,
                dashboard_token=env.get("WORKFLOWS_DASHBOARD_TOKEN") or None,
                log_format=env.get("WORKFLOWS_LOG_FORMAT", "text").lower() or "text",
                metrics=env.get("WORKFLOWS_METRICS", "").lower() in ("1", "true", "yes", "on")
                or bool(env.get("WORKFLOWS_METRICS_PORT")),
                metrics_port=int(env["WORKFLOWS_METRICS_PORT"]) if env.get("WORKFLOWS_METRICS_PORT") else None,
                traces=env.get("WORKFLOWS_TRACES") or None,
                retention=_retention(env.get("WORKFLOWS_RETENTION")),
                retention_horizon=_duration(env.get("WORKFLOWS_RETENTION_HORIZON"), "WORKFLOWS_RETENTION_HORIZON",
                                            DEFAULT_RETENTION_HORIZON_SECONDS),
                code_version=env.get("WORKFLOWS_CODE_VERSION", "").strip() or None,
                serve_versions=tuple(v.strip() for v in env.get("WORKFLOWS_SERVE_VERSIONS", "").split(",")
                                     if v.strip()),
                defer_seconds=float(env.get("WORKFLOWS_DEFER_SECONDS", "30")),
                defer_max_seconds=float(env.get("WORKFLOWS_DEFER_MAX_SECONDS", "3600")),
                index_shards=_index_shards(env.get("WORKFLOWS_INDEX_SHARDS")),
                web_body_timeout=float(env.get("WORKFLOWS_WEB_BODY_TIMEOUT", "10")),
                web_max_connections=int(env.get("WORKFLOWS_WEB_MAX_CONNECTIONS", "100")),
                web_trusted_proxies=tuple(a.strip() for a in env.get("WORKFLOWS_WEB_TRUSTED_PROXIES", "").split(",")
                                          if a.strip()),
                access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
                secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
            )
        except ValueError as exc:
            if isinstance(exc, ConfigurationError):
                raise
            raise ConfigurationError(f"invalid workflows setting: {exc}") from exc

    def with_(self, **changes: object) -> Settings:
        """Return a copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def broker_url(self) -> str:
        """Return the Celery broker URL for SQS, pointing at ``sqs_endpoint`` when set.

        The key and secret are percent-quoted: a secret holds ``/``, ``+`` or ``=`` as often as
        not, and unquoted a ``/`` ends the URL's credentials (kombu unquotes them again). Celery
        and kombu print the URL with the secret masked (``sqs://KEY:**@host``).
        """
        if not self.sqs_endpoint:
            return "sqs://"
        parsed = urlparse(self.sqs_endpoint)
        key = quote(self.access_key_id or "local", safe="")
        secret = quote(self.secret_access_key or "local", safe="")
        port = f":{parsed.port}" if parsed.port else ""
        return f"sqs://{key}:{secret}@{parsed.hostname}{port}"

    @property
    def bucket(self) -> str:
        """The payload bucket's name: ``payload_bucket``, else derived from the table prefix."""
        return self.payload_bucket or f"{self.table_prefix}payloads".lower().replace("_", "-").replace(".", "-")

    @property
    def retention_days(self) -> int:
        """The retention in whole days, rounded up (at least 1; the default retention's when it is off)."""
        seconds = DEFAULT_RETENTION_SECONDS if self.retention is None else self.retention
        return max(1, math.ceil(seconds / 86_400))

    @property
    def payload_expiry(self) -> int:
        """The lifecycle rule's days: ``payload_expiry_days``, else :attr:`retention_days`."""
        return self.payload_expiry_days or self.retention_days

    @property
    def inline_payload_bytes(self) -> int:
        """The largest payload stored inline (in an item or a message); larger ones go to S3."""
        return min(self.max_payload_bytes, self.payload_threshold_bytes)

    @property
    def sqs_is_secure(self) -> bool:
        """Whether the SQS endpoint uses TLS."""
        return not self.sqs_endpoint or self.sqs_endpoint.startswith("https")


def _index_shards(text: str | None) -> int:
    """``WORKFLOWS_INDEX_SHARDS``: a whole number of shards (validated by :class:`Settings`)."""
    if text is None or not text.strip():
        return DEFAULT_INDEX_SHARDS
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigurationError(f"WORKFLOWS_INDEX_SHARDS must be a whole number in 1..{MAX_INDEX_SHARDS}, "
                                 f"got {text!r}") from None


def _retention(text: str | None) -> float | None:
    """``WORKFLOWS_RETENTION``: a duration, or ``off`` (keep ended runs forever)."""
    if text is not None and text.strip().lower() in ("off", "never", "forever"):
        return None
    return _duration(text, "WORKFLOWS_RETENTION", DEFAULT_RETENTION_SECONDS)


def _duration(text: str | None, name: str, default: float) -> float:
    """A duration setting (``30d``, ``12h``, seconds); ``default`` when unset."""
    if text is None or not text.strip():
        return default
    from .durations import to_seconds
    from .errors import InvalidDuration

    try:
        return to_seconds(text, what=name)
    except InvalidDuration as exc:
        raise ConfigurationError(str(exc)) from exc


_override: Settings | None = None


@lru_cache(maxsize=1)
def _from_env() -> Settings:
    return Settings.from_env()


def get_settings() -> Settings:
    """Return the active settings (the override, else read once from the environment)."""
    return _override if _override is not None else _from_env()


def configure(settings: Settings | None) -> None:
    """Replace the active settings (``None`` re-reads the environment)."""
    global _override
    _override = settings
    _from_env.cache_clear()
