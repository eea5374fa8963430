"""The payload bucket of a deployment: its one lifecycle rule, shared by ``init-aws`` and the template."""

from __future__ import annotations

from typing import Any

from workflows.core.payloads import KEY_PREFIX

LIFECYCLE_RULE_ID = "expire-workflow-payloads"


def lifecycle_rule(days: int) -> dict[str, Any]:
    """The rule in S3's API form: payload objects expire ``days`` after they were written."""
    return {"ID": LIFECYCLE_RULE_ID, "Status": "Enabled", "Filter": {"Prefix": KEY_PREFIX},
            "Expiration": {"Days": days}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
