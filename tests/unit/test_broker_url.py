"""The broker URL carries the AWS keys of a custom SQS endpoint intact, whatever characters they hold."""

from __future__ import annotations

from kombu.utils.url import parse_url

from workflows.settings import Settings


def test_a_secret_with_url_characters_survives_the_broker_url() -> None:
    # AWS secret access keys hold '/' and '+'; unescaped, kombu read part of one as the port.
    secret = "wJalr/XUtnFEMI+K7MDENG/bPxRfiCY=EXAMPLE:KEY@x"
    settings = Settings(sqs_endpoint="http://127.0.0.1:4566", access_key_id="AKIA/EXAMPLE", secret_access_key=secret)
    parts = parse_url(settings.broker_url())
    assert (parts["userid"], parts["password"]) == ("AKIA/EXAMPLE", secret)
    assert (parts["hostname"], parts["port"]) == ("127.0.0.1", 4566)


def test_without_an_endpoint_the_broker_url_names_no_keys() -> None:
    assert Settings(secret_access_key="s/e+c").broker_url() == "sqs://"
