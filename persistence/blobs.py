"""The Blobs port on S3: large payloads as objects of the payload bucket (boto3 over HTTP)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from workflows.core.storage.aws_actions import aws_actions
from workflows.deploy.payloads import ENDED_TAGGING, LIFECYCLE_RULE_ID, lifecycle_rule
from workflows.errors import StorageError, Throttled
from workflows.settings import Settings

#: botocore retries for S3: throttles (SlowDown, 503) and 5xx are retried with backoff.
S3_RETRIES = {"mode": "standard", "max_attempts": 10}
S3_THROTTLE_CODES = frozenset({"SlowDown", "ThrottlingException", "RequestLimitExceeded", "503"})
MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


@lru_cache(maxsize=8)
def s3_client(settings: Settings) -> Any:
    """A (shared, thread-safe) boto3 S3 client for ``settings``: path-style addressing, so a
    local endpoint (``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``) needs no bucket DNS names."""
    return boto3.client("s3", region_name=settings.region, endpoint_url=settings.s3_endpoint,
                        config=Config(retries=dict(S3_RETRIES), s3={"addressing_style": "path"}))


def _error(action: str, key: str, exc: Exception) -> StorageError:
    code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""
    kind = Throttled if code in S3_THROTTLE_CODES else StorageError
    error = kind(f"{action} of payload {key} failed: {code or type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


class S3Blobs:
    """Objects of the payload bucket (``settings.bucket``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.bucket = settings.bucket

    @aws_actions("s3:PutObject@payloads")
    def put_blob(self, key: str, data: bytes) -> None:
        """PutObject ``data`` under ``key``."""
        try:
            s3_client(self.settings).put_object(Bucket=self.bucket, Key=key, Body=data,
                                                ContentType="application/json")
        except (ClientError, BotoCoreError) as exc:
            raise _error("put", key, exc) from exc

    @aws_actions("s3:GetObject@payloads")
    def get_blob(self, key: str) -> bytes | None:
        """GetObject ``key``; None if there is no such object."""
        try:
            response = s3_client(self.settings).get_object(Bucket=self.bucket, Key=key)
            body: bytes = response["Body"].read()
            return body
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in MISSING_CODES:
                return None
            raise _error("get", key, exc) from exc
        except BotoCoreError as exc:
            raise _error("get", key, exc) from exc

    def copy_blob(self, source: str, target: str) -> bool:
        """CopyObject ``source`` to ``target`` (server side), without the source's tags; False if
        there is no object ``source``."""
        return self._copy(source, target, "copy", TaggingDirective="REPLACE", Tagging="")

    def mark_ended(self, key: str) -> bool:
        """CopyObject ``key`` onto itself tagged ended (the copy is its new last write, which the
        lifecycle rule counts from); False if there is no such object."""
        return self._copy(key, key, "mark ended", TaggingDirective="REPLACE", Tagging=ENDED_TAGGING,
                          MetadataDirective="REPLACE", ContentType="application/json",
                          Metadata={"workflows-ended": "true"})  # a copy onto itself must change metadata

    @aws_actions("s3:GetObject@payloads", "s3:PutObject@payloads", "s3:PutObjectTagging@payloads")
    def _copy(self, source: str, target: str, action: str, **options: Any) -> bool:
        try:
            s3_client(self.settings).copy_object(Bucket=self.bucket, Key=target,
                                                 CopySource={"Bucket": self.bucket, "Key": source}, **options)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in MISSING_CODES:
                return False
            raise _error(action, source, exc) from exc
        except BotoCoreError as exc:
            raise _error(action, source, exc) from exc

    @aws_actions("s3:ListBucket@bucket")
    def list_blobs(self, prefix: str) -> list[tuple[str, float]]:
        """ListObjectsV2 under ``prefix`` (one request per 1,000 objects): keys and last writes."""
        found: list[tuple[str, float]] = []
        try:
            for page in s3_client(self.settings).get_paginator("list_objects_v2").paginate(
                    Bucket=self.bucket, Prefix=prefix):
                found += [(item["Key"], item["LastModified"].timestamp()) for item in page.get("Contents", [])]
        except (ClientError, BotoCoreError) as exc:
            raise _error("list", prefix, exc) from exc
        return found

    @aws_actions("s3:DeleteObject@payloads")
    def delete_blob(self, key: str) -> None:
        """DeleteObject ``key``."""
        try:
            s3_client(self.settings).delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise _error("delete", key, exc) from exc


@aws_actions("s3:ListBucket@bucket", "s3:CreateBucket@bucket", "s3:GetLifecycleConfiguration@bucket",
             "s3:PutLifecycleConfiguration@bucket")
def ensure_bucket(settings: Settings) -> tuple[str, str]:
    """Create the payload bucket if missing and set its lifecycle rule; return
    ``(name, "created" | "updated" | "exists")``. Idempotent."""
    client = s3_client(settings)
    name = settings.bucket
    try:
        client.head_bucket(Bucket=name)
        action = "exists"
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "") not in MISSING_CODES | {"NoSuchBucket"}:
            raise _error("head bucket", name, exc) from exc
        extra = {} if settings.region == "us-east-1" else {
            "CreateBucketConfiguration": {"LocationConstraint": settings.region}}
        client.create_bucket(Bucket=name, **extra)
        action = "created"
    rule = lifecycle_rule(settings.payload_expiry)
    try:
        current = client.get_bucket_lifecycle_configuration(Bucket=name).get("Rules", [])
    except ClientError:
        current = []
    if not any(r.get("ID") == LIFECYCLE_RULE_ID and r.get("Expiration") == rule["Expiration"]
               and r.get("Filter") == rule["Filter"] for r in current):
        others = [r for r in current if r.get("ID") != LIFECYCLE_RULE_ID]
        client.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": [*others, rule]})
        action = "created" if action == "created" else "updated"
    return name, action
