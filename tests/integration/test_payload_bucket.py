"""The payload bucket that ``workflows init-aws`` creates: idempotent, with its lifecycle rule."""

from __future__ import annotations

import uuid

from persistence.blobs import LIFECYCLE_RULE_ID, ensure_bucket, s3_client
from workflows.settings import Settings


def test_the_bucket_is_created_once_and_its_objects_expire(settings: Settings) -> None:
    own = settings.with_(table_prefix=f"b{uuid.uuid4().hex[:6]}-", payload_expiry_days=30)
    assert ensure_bucket(own) == (own.bucket, "created")
    assert ensure_bucket(own) == (own.bucket, "exists")
    [rule] = s3_client(own).get_bucket_lifecycle_configuration(Bucket=own.bucket)["Rules"]
    assert (rule["ID"], rule["Status"], rule["Expiration"]["Days"]) == (LIFECYCLE_RULE_ID, "Enabled", 30)
    assert rule["Filter"]["Prefix"] == "payloads/"
    longer = own.with_(payload_expiry_days=120)
    assert ensure_bucket(longer) == (own.bucket, "updated")
    [rule] = s3_client(own).get_bucket_lifecycle_configuration(Bucket=own.bucket)["Rules"]
    assert rule["Expiration"]["Days"] == 120
