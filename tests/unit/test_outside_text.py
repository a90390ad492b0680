"""Text from outside (a provider's answer, a header, an exception's message) made safe to keep:
no NUL, no lone surrogate, no control character, bounded — whatever came in."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.outside import MAX_TEXT, outside_text

FORGED = "x\n2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE"


def _safe(text: str, limit: int) -> None:
    assert len(text) <= limit
    text.encode("utf-8")  # strict: no lone surrogate
    orjson.dumps(text)  # what a batch does with it
    assert "\x00" not in text
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)
    assert not any(c in text for c in "\u2028\u2029\u202e\u2066")
    assert text == text.strip()


@given(st.text(), st.integers(min_value=1, max_value=400))
def test_any_text_comes_out_safe_and_bounded(value: str, limit: int) -> None:
    _safe(outside_text(value, limit), limit)


@given(st.binary(max_size=2000))
def test_any_bytes_come_out_safe_and_bounded(value: bytes) -> None:
    _safe(outside_text(value), MAX_TEXT)


@given(st.text())
def test_cleaning_twice_changes_nothing_more(value: str) -> None:
    once = outside_text(value)
    assert outside_text(once) == once


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=MAX_TEXT))
def test_plain_printable_text_is_kept_as_it_is(value: str) -> None:
    assert outside_text(value) == value.strip()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"bad\x00body", "bad\ufffdbody"),
        ("bad\x00body", "bad\ufffdbody"),
        (b"250 queued as \xff\xfe", "250 queued as \ufffd\ufffd"),
        ("250 queued as \udcff", "250 queued as \ufffd"),  # surrogateescape, as aiosmtplib keeps it
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),  # as JSON's "\\ud800" gives it
        (FORGED, "x 2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE"),
        ("<html>\r\n  <body>\tError</body>\r\n</html>\n", "<html> <body> Error</body> </html>"),
        ("\x1b[31mred\x1b[0m", "\ufffd[31mred\ufffd[0m"),  # no terminal escapes
        ("abc\u202edcba", "abc\ufffddcba"),  # no right-to-left override
        ("café ☕ 日本", "café ☕ 日本"),
        (None, "None"),
        (ValueError("no\nway"), "no way"),
    ],
)
def test_what_becomes_of_hostile_answers(value: object, expected: str) -> None:
    assert outside_text(value) == expected


def test_a_long_answer_is_cut_with_an_ellipsis() -> None:
    cut = outside_text("a" * 1000, 50)

    assert cut == "a" * 49 + "…"
    assert outside_text(b"b" * 10_000_000) == "b" * (MAX_TEXT - 1) + "…"
    assert outside_text("é" * MAX_TEXT) == "é" * MAX_TEXT  # characters are counted, not bytes
