"""The payload bucket of a deployment: its one lifecycle rule, shared by ``init-aws`` and the template.

A run's objects carry no expiry while it is live; beat's retention sweep marks them ended (tag
:data:`ENDED_TAG` = ``true``, written by a copy onto itself, which S3 counts as the object's
last write), and the rule expires only objects so tagged, ``days`` after that.
"""

from __future__ import annotations

from typing import Any

from workflows.core.storage.payloads import KEY_PREFIX

LIFECYCLE_RULE_ID = "expire-workflow-payloads"
ENDED_TAG = "workflows-ended"
#: The tag set of an ended run's object, as the ``x-amz-tagging`` header writes it.
ENDED_TAGGING = f"{ENDED_TAG}=true"


def lifecycle_rule(days: int) -> dict[str, Any]:
    """The rule in S3's API form: objects of ended runs expire ``days`` after they were marked ended."""
    return {"ID": LIFECYCLE_RULE_ID, "Status": "Enabled",
            "Filter": {"And": {"Prefix": KEY_PREFIX, "Tags": [{"Key": ENDED_TAG, "Value": "true"}]}},
            "Expiration": {"Days": days}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
