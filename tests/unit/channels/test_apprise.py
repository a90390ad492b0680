"""The apprise channel's contact checks and masking, without a network."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.channels.contacts import refusal, stored_or_field
from tocsin.channels.apprise import MAX_URL_LENGTH, mask, validate_contact
from tocsin.errors import InvalidInput


@pytest.mark.parametrize(
    "url",
    [
        "ntfys://ntfy.sh/plants",
        "ntfy://ana:s3cret@ntfy.example.com/plants",
        "gotify://gotify.example.com/AbCdEf1234567",
        "pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@azGDORePK8gMaC0QOYAMyEEuzJnyUi",
        "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/12315544",
        "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js",
        "json://user:pass@hooks.example.com/tocsin",
    ],
)
def test_urls_apprise_understands_are_stored_as_given(url: str) -> None:
    assert validate_contact({"url": url}) == {"url": url}


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({}, "url", "required"),
        ({"url": 7}, "url", "required"),
        ({"url": "  "}, "url", "required"),
        ({"url": "ntfys://ntfy.sh/a", "token": "x"}, "token", "unknown field"),
        ({"url": "ntfys://ntfy.sh/" + "a" * MAX_URL_LENGTH}, "url", "at most 2048"),
        ({"url": "ntfys://ntfy.sh/a\nb"}, "url", "printable"),
        ({"url": "ntfy.sh/plants"}, "url", "not an Apprise URL"),
        ({"url": "nosuch://ana:s3cret@host/x"}, "url", "cannot use this nosuch:// URL"),
        ({"url": "tgram://s3cret-but-no-chat"}, "url", "cannot use this tgram:// URL"),
        ({"url": "syslog://"}, "url", "notifies the server, not you"),
    ],
)
def test_a_bad_url_is_refused_naming_the_field(body: Any, field: str, says: str) -> None:
    error = refusal(validate_contact, body)
    assert error.field == field
    assert says in error.message
    assert "s3cret" not in str(error)


@settings(max_examples=200)
@given(st.text(max_size=100), st.sampled_from(["", "json://", "ntfy://", "tgram://", "x://"]))
def test_any_text_is_accepted_or_refused_without_being_echoed(text: str, scheme: str) -> None:
    url = scheme + text
    stored = stored_or_field(validate_contact, {"url": url})
    if isinstance(stored, InvalidInput):
        assert stored.field == "url"
        assert len(text) < 4 or text not in stored.message
    else:
        assert stored == {"url": url}


def test_every_piece_of_the_url_is_masked_in_a_reason() -> None:
    url = "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/12315544"
    reason = (
        "Failed to send Telegram notification to 12315544: Unauthorized; POST "
        "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage"
    )
    masked = mask(reason, url)
    for piece in ("123456789", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "12315544"):
        assert piece not in masked
    assert masked.startswith("Failed to send Telegram notification to ***: Unauthorized")


def test_a_short_password_is_masked_too_and_decoded_forms_as_well() -> None:
    url = "json://ana:p%40s@hooks.example.com/tocsin"
    masked = mask("auth ana:p@s refused by hooks.example.com for tocsin", url)
    assert masked == "auth ana:*** refused by *** for ***"
