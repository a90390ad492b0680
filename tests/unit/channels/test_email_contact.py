"""The email contact's fields as the API takes them, and the message made of a reminder."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.integration.channels.firing_factory import firing
from tocsin.channels.email import (
    envelope_address,
    html_body,
    render,
    sender_identity,
    subject,
    text_body,
    validate_contact,
)
from tocsin.domain import Channel
from tocsin.errors import InvalidInput


@pytest.mark.parametrize(
    ("given_address", "stored"),
    [
        ("ada@example.com", "ada@example.com"),
        ("  Ada.Lovelace+alerts@Example.COM ", "Ada.Lovelace+alerts@example.com"),
        ("ada@BÜCHER.example.com", "ada@bücher.example.com"),
        ("ada@xn--bcher-kva.example.com", "ada@bücher.example.com"),
        ("o'brien@sub.example.co.uk", "o'brien@sub.example.co.uk"),
    ],
)
def test_good_addresses_are_stored_normalised(given_address: str, stored: str) -> None:
    assert validate_contact({"address": given_address}) == {"address": stored}


@pytest.mark.parametrize(
    "address",
    [
        "",
        "   ",
        "ada",
        "ada@",
        "@example.com",
        "ada@@example.com",
        "ada@example",  # no dot: no public domain
        "ada@localhost",  # special-use names take no public mail
        "ada..b@example.com",
        ".ada@example.com",
        "ada@exa mple.com",
        "Ada <ada@example.com>",  # a display name is not an address
        "ada@example.com\nBcc: eve@example.com",
        "josé@example.com",  # a Unicode local part needs SMTPUTF8 all the way
        '"ada"@example.com',  # quoted local parts: legal, rarely meant, refused
        "ada@[127.0.0.1]",
        "a" * 65 + "@example.com",
    ],
)
def test_bad_addresses_are_refused_naming_the_field(address: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_contact({"address": address})
    assert refused.value.field == "address"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "address"),
        ({"address": None}, "address"),
        ({"address": 42}, "address"),
        ({"address": ["ada@example.com"]}, "address"),
        ({"address": "ada@example.com", "name": "Ada"}, "name"),
    ],
)
def test_missing_wrong_and_unknown_fields(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_contact(fields)
    assert refused.value.field == field


@given(st.text(max_size=80))
def test_any_text_is_refused_or_stored_stably(text: str) -> None:
    """Never an error other than InvalidInput; what is stored validates to itself and has
    an ASCII form to send to."""
    stored = _validated(text)
    if isinstance(stored, str):
        assert stored == "address"  # refused, naming the field
        return
    assert validate_contact(stored) == stored
    assert envelope_address(stored["address"]) is not None


def _content(part: object) -> str:
    assert isinstance(part, EmailMessage)
    return _lines(part.get_content())


def _lines(text: str) -> str:
    """Text as a mail reader gives it back: line breaks are the wire's CRLF."""
    return "\n".join(text.splitlines())


def _validated(address: str) -> dict[str, str] | str:
    """The stored fields, or the field an InvalidInput named."""
    try:
        return validate_contact({"address": address})
    except InvalidInput as refused:
        return refused.field


@given(st.text())
def test_a_subject_is_one_short_line(text: str) -> None:
    line = subject(text)
    assert line
    assert len(line) <= 120
    assert not any(char < " " or "\x7f" <= char <= "\x9f" for char in line)  # no Cc
    assert not any(char in line for char in "\x1c\x1d\x1e\u2028\u2029")  # no line breaks


@given(st.text())
def test_any_text_reads_back_from_the_message(text: str) -> None:
    """Whatever the reminder says, a mail reader decodes the Subject and the text part to
    what was meant, and the boundary never occurs inside a part."""
    ring = firing(channel=Channel.EMAIL, text=text)
    raw = render(ring, sender_identity('"Técsin" <alerts@example.com>'), "ada@example.com")
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    assert message["Subject"] == subject(text)
    assert message["From"].addresses[0].display_name == "Técsin"
    parts = list(message.iter_parts())
    assert [_content(part) for part in parts] == [_lines(text_body(ring)), _lines(html_body(ring))]
    assert raw.count(b"--=_tocsin_" + ring.id.encode()) == 3  # two parts and the end
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert all(len(line) <= 78 for line in head.split(b"\r\n"))
    assert raw.isascii()


def test_a_subject_keeps_a_short_text_and_cuts_a_long_one() -> None:
    assert subject("  Call\nmom  ") == "Call mom"
    assert subject("") == "Reminder"
    assert subject("x" * 200) == "x" * 119 + "…"
