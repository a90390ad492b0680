"""A provider's answer, however hostile (a NUL, bytes that are not UTF-8, a forged log line, a
page of megabytes), becomes an error and a provider id that the store and the log can keep:
each channel's classification, without a network (the peers' tests send the same through
real servers)."""

from __future__ import annotations

import aiosmtplib
import orjson
import pytest

from tocsin.channels import apprise, email, sms, webhook, webpush
from tocsin.channels.base import DeliveryResult
from tocsin.domain import Outcome

FORGED = "\n2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE"
BODY = b"bad\x00body\xff\xfe" + FORGED.encode() + b"\x1b[2J" + b"z" * 100_000
# aiohttp keeps a header's bytes that are not UTF-8 as lone surrogates (surrogateescape), and
# the HTTP/2 client reads headers as latin-1, NUL and all.
HEADER = "id-\udcff\x00" + FORGED


def _kept(result: DeliveryResult) -> None:
    """What the store and the log can hold: strict UTF-8, JSON, one line, bounded."""
    for text in (result.error, result.provider_id):
        if text is None:
            continue
        text.encode("utf-8")
        orjson.dumps(text)
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)
        assert len(text) <= 600


@pytest.mark.parametrize("status", [200, 400, 410, 429, 500])
def test_webhook_answers(status: int) -> None:
    result = webhook._classify(status, {"x-message-id": HEADER, "retry-after": "1"}, BODY)

    _kept(result)
    if status == 500:
        assert result.error is not None
        assert result.error.startswith("HTTP 500: bad\ufffdbody\ufffd\ufffd 2026-12-04")
    if status == 410:
        assert result.gone


@pytest.mark.parametrize("value", ["²", "٣", "1e999", "\x00", "Fri, 31 Dec 99999 23:59:59 GMT"])
def test_a_retry_after_that_is_no_number_of_seconds_is_ignored(value: str) -> None:
    result = webhook._classify(503, {"retry-after": value}, b"")

    assert result.outcome is Outcome.RETRY
    assert result.retry_after is None


@pytest.mark.parametrize("status", [201, 400, 404, 500])
def test_sms_answers(status: int) -> None:
    twilio = orjson.dumps({"code": 21610, "message": "opted\x00out" + FORGED, "sid": "S\x00\x1b"})

    for body in (twilio, BODY):
        _kept(sms.classify(status, {}, body))


@pytest.mark.parametrize("status", [201, 404, 410, 413, 500])
def test_webpush_answers(status: int) -> None:
    _kept(webpush.classify(status, {"location": HEADER}, BODY[: webpush.MAX_ERROR_BODY]))


@pytest.mark.parametrize(
    "error",
    [
        aiosmtplib.SMTPRecipientsRefused(
            [aiosmtplib.SMTPRecipientRefused(550, "no \udcff\x00 user" + FORGED, "a@b.example")]
        ),
        aiosmtplib.SMTPResponseException(451, "try \udcfe later" + FORGED),
        aiosmtplib.SMTPSenderRefused(553, "\udcff" * 5000, "from@b.example"),
        aiosmtplib.SMTPAuthenticationError(535, "no\x00" + FORGED),
        ConnectionResetError("reset \udcff" + FORGED),
        aiosmtplib.SMTPException("odd\x00" + FORGED),
    ],
)
def test_email_answers(error: Exception) -> None:
    result = email.classify(error, 5.0)

    _kept(result)
    assert result.outcome in (Outcome.RETRY, Outcome.FAILED)


def test_apprise_reasons() -> None:
    url = "json://hooks.example.com/tocsin"
    reason = apprise.mask("JSON failed\x00: error=403 \udcff" + FORGED + "x" * 1000, url)

    _kept(DeliveryResult.retry(f"apprise: {reason}"))
    assert "hooks.example.com" not in reason
