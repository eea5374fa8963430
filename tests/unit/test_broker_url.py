"""The SQS broker URL carries any AWS secret, and never shows it.

Real secret keys hold ``/``, ``+`` and ``=``; unquoted, a ``/`` ended the URL's credentials
and kombu refused the URL with an error quoting part of the secret.
"""

from __future__ import annotations

import pytest
from celery import Celery
from kombu import Connection

from workflows.celery.config import celery_config
from workflows.celery.sqs import Transport
from workflows.settings import Settings

SECRETS = ["ab/c+d=e/f", "wJalrXUtnFEMI/K7MDENG+bPxRfiCY/EXAMPLE=KEY", "x@y:z#w?v%25", "plain"]


def parts(secret: str) -> list[str]:
    """The pieces of a secret a broken URL would show (split at its punctuation)."""
    return [p for p in secret.replace("+", "/").replace("=", "/").split("/") if len(p) > 3] + [secret]


@pytest.mark.parametrize("secret", SECRETS)
def test_a_secret_with_url_characters_reaches_kombu_whole(secret: str) -> None:
    settings = Settings(sqs_endpoint="http://127.0.0.1:4566", access_key_id="AKIA/KEY", secret_access_key=secret)
    connection = Connection(settings.broker_url(), transport=Transport)
    assert (connection.userid, connection.password) == ("AKIA/KEY", secret)
    assert (connection.hostname, connection.port) == ("127.0.0.1", 4566)


@pytest.mark.parametrize("secret", SECRETS)
def test_the_secret_is_masked_wherever_celery_shows_the_broker(secret: str) -> None:
    settings = Settings(sqs_endpoint="http://127.0.0.1:4566", access_key_id="AKIAKEY", secret_access_key=secret)
    app = Celery("secret-check", set_as_current=False)
    app.config_from_object(celery_config(settings))
    shown = [app.connection_for_write().as_uri(), app.conf.humanize(with_defaults=False, censored=True),
             repr(settings), str(settings)]
    try:  # the worker's startup banner prints the broker this way
        from celery.apps.worker import Worker

        shown.append(Worker(app=app, hostname="w@h", quiet=True).startup_info())
    except Exception as exc:  # pragma: no cover - an error text must not carry it either
        shown.append(str(exc))
    for text in shown:
        for piece in parts(secret):
            assert piece not in text, text
    assert "AKIAKEY:**@127.0.0.1:4566" in shown[0] and "AKIAKEY:**@127.0.0.1:4566" in shown[-1]
