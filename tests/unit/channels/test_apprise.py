"""The apprise channel's contact checks and masking, without a network."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.unit.channels.contacts import refusal, stored_or_field
from tocsin.channels.apprise import MAX_URL_LENGTH, check_reach, mask, validate_contact
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


SCHEMES = ["", "json://", "ntfy://", "tgram://", "x://"]
# The refusals' own wording, one of each kind: a text found in it is no echo (Hypothesis draws
# texts from the literals of the code under test, such as "this").
OWN_WORDING = " ".join(
    answer.message
    for body in (
        {},
        {"url": ""},
        {"url": "x" * 5000},
        {"url": "plants"},
        *({"url": scheme + "s3cret-but-no-chat"} for scheme in SCHEMES if scheme),
        {"url": "syslog://"},
    )
    if isinstance(answer := stored_or_field(validate_contact, body), InvalidInput)
)


@settings(max_examples=200)
@given(st.text(max_size=100), st.sampled_from(SCHEMES))
@example("a://", "")  # the whole text a scheme, which the message names
def test_any_text_is_accepted_or_refused_without_being_echoed(text: str, scheme: str) -> None:
    url = scheme + text
    stored = stored_or_field(validate_contact, {"url": url})
    if isinstance(stored, InvalidInput):
        assert stored.field == "url"
        # The message may name the scheme (`a://`, when that is all the text is), never more.
        named = re.match(r"[A-Za-z0-9+.-]+://", url)
        message = stored.message.replace(named.group(0).lower(), "", 1) if named else stored.message
        assert len(text) < 4 or text not in message or text in OWN_WORDING
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


@pytest.mark.parametrize(
    "url",
    [
        "ntfys://ntfy.sh/plants",  # the URL's host
        "ntfy://plants",  # a topic on ntfy.sh
        "json://user:pass@hooks.example.com/tocsin",
        "gotifys://gotify.example.com/AbCdEf1234567",
        "mailtos://ana:s3cret@gmail.com",  # Apprise's SMTP server for the domain
        "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/12315544",  # api.telegram.org
        "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js",  # an id, not an address
    ],
)
def test_services_that_reach_public_hosts_are_accepted(url: str) -> None:
    check_reach(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "json://ana:s3cret@127.0.0.1:8080/tocsin",
        "jsons://[::1]/tocsin",
        "xml://10.0.0.7/tocsin",
        "form://169.254.169.254/latest",
        "json://2130706433/tocsin",  # 127.0.0.1 in a legacy form
        "json://[::ffff:a9fe:a9fe]/latest",  # 169.254.169.254, IPv4-mapped
        "ntfys://localhost/plants",
        "gotify://metadata.google.internal/AbCdEf1234567",
        "mailto://ana:s3cret@example.com?smtp=10.0.0.25",  # the SMTP server named
    ],
)
def test_services_that_would_reach_private_hosts_are_refused(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_reach(url, allow_private=False)
    error = refused.value
    assert error.field == "url"
    assert "would connect to a host that is not public" in error.message
    assert "TOCSIN_ALLOW_PRIVATE_URLS=true" in error.message
    assert "s3cret" not in error.message
    check_reach(url, allow_private=True)


@pytest.mark.parametrize(
    "url",
    [
        "rsyslog://syslog.example.com",
        "irc://irc.example.com/#plants",
        "aprs://DF1JSL-15:12345@DF1ABC",
    ],
)
def test_services_that_connect_where_tocsin_cannot_see_need_private_urls_allowed(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_reach(url, allow_private=False)
    error = refused.value
    assert "Tocsin cannot check where" in error.message
    assert "TOCSIN_ALLOW_PRIVATE_URLS=true" in error.message
    check_reach(url, allow_private=True)
