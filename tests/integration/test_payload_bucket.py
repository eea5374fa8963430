"""The payload bucket that ``workflows init-aws`` creates: idempotent, with its lifecycle rule."""

from __future__ import annotations

import uuid

from persistence.blobs import LIFECYCLE_RULE_ID, ensure_bucket, s3_client
from workflows.settings import Settings


def test_the_bucket_is_created_once_and_its_ended_objects_expire(settings: Settings) -> None:
    own = settings.with_(table_prefix=f"b{uuid.uuid4().hex[:6]}-", payload_expiry_days=30)
    assert ensure_bucket(own) == (own.bucket, "created")
    assert ensure_bucket(own) == (own.bucket, "exists")
    [rule] = s3_client(own).get_bucket_lifecycle_configuration(Bucket=own.bucket)["Rules"]
    assert (rule["ID"], rule["Status"], rule["Expiration"]["Days"]) == (LIFECYCLE_RULE_ID, "Enabled", 30)
    assert rule["Filter"]["And"] == {"Prefix": "payloads/", "Tags": [{"Key": "workflows-ended", "Value": "true"}]}
    longer = own.with_(payload_expiry_days=120)
    assert ensure_bucket(longer) == (own.bucket, "updated")
    [rule] = s3_client(own).get_bucket_lifecycle_configuration(Bucket=own.bucket)["Rules"]
    assert rule["Expiration"]["Days"] == 120


def test_a_bucket_with_the_older_rule_gets_the_new_one(settings: Settings) -> None:
    own = settings.with_(table_prefix=f"b{uuid.uuid4().hex[:6]}-", payload_expiry_days=30)
    ensure_bucket(own)
    old = {"ID": LIFECYCLE_RULE_ID, "Status": "Enabled", "Filter": {"Prefix": "payloads/"}, "Expiration": {"Days": 30}}
    s3_client(own).put_bucket_lifecycle_configuration(Bucket=own.bucket, LifecycleConfiguration={"Rules": [old]})
    assert ensure_bucket(own) == (own.bucket, "updated")  # an upgrade: objects of live runs stop expiring
    [rule] = s3_client(own).get_bucket_lifecycle_configuration(Bucket=own.bucket)["Rules"]
    assert "And" in rule["Filter"]
