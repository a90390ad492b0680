"""Every log format keeps one record on one line: a newline, a NUL or a terminal escape in a
message, a field or an exception's text is escaped, so no one outside can forge a line."""

from __future__ import annotations

import io
import json
import logging

from hypothesis import given
from hypothesis import strategies as st

from tocsin.logging import JsonFormatter, KeyValueFormatter

FORGED = "x\n2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE"
HOSTILE = FORGED + "\r\x00\x1b[2K\u2028\u202e\udcff end"


def _hostile_log(formatter: logging.Formatter) -> str:
    """What `formatter` writes of three records holding outside text (a message, fields, an
    exception), checked to hold nothing that could forge a line."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    # A logger outside the hierarchy: pytest's capture on the root never sees the hostile
    # text (pytest-xdist cannot send a lone surrogate back from its worker).
    logger = logging.Logger("tocsin.test.logging", logging.INFO)
    logger.addHandler(handler)
    try:
        logger.warning("destination %s disabled: %s", "c1", HOSTILE, extra={"answer": HOSTILE})
        logger.info("plain", extra={"nul": "a\x00b", "tab": "a\tb", "bell": "\x07"})
        try:
            raise ValueError(FORGED)
        except ValueError:
            logger.exception("channel %s raised", "webhook")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    for unsafe in ("\x00", "\r", "\x1b", "\u2028", "\u202e"):
        assert unsafe not in text
    assert not any("\ud800" <= c <= "\udfff" for c in text)
    assert not any(line.startswith("2026-12-04T00:00:00.000Z") for line in text.splitlines())
    return text


def test_the_key_value_format_escapes_what_could_forge_a_line() -> None:
    text = _hostile_log(KeyValueFormatter())

    records = [line for line in text.splitlines() if not line.startswith(" ")]
    assert len(records) == 3, text  # a traceback's lines are indented under its record
    warning, plain, error = records
    assert "disabled: x\\n2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE\\r\\x00" in warning
    assert "\\u202e" in warning
    assert "\\udcff end" in warning
    assert 'answer="x\\n2026' in warning
    assert 'nul="a\\u0000b"' in plain
    assert 'tab="a\\tb"' in plain
    assert 'bell="\\u0007"' in plain
    assert error.endswith("channel webhook raised")
    assert "\n  ValueError: x\n  2026-12-04T00:00:00.000Z ERROR tocsin.fake FORGED LINE" in text


def test_the_json_format_keeps_each_record_on_one_line() -> None:
    text = _hostile_log(JsonFormatter())

    warning, plain, error = (json.loads(line) for line in text.splitlines())
    assert warning["message"] == f"destination c1 disabled: {HOSTILE}"
    assert warning["answer"] == HOSTILE
    assert plain["nul"] == "a\x00b"
    assert FORGED in error["exception"]


@given(st.text(), st.text())
def test_any_message_and_field_make_one_line(message: str, value: str) -> None:
    record = logging.makeLogRecord({"msg": message, "name": "tocsin.x", "field": value})
    record.levelname = "INFO"
    line = KeyValueFormatter().format(record)
    assert len(line.splitlines()) == 1
    assert "\x00" not in line
    line.encode("utf-8")  # strict: no lone surrogate reaches the stream
    assert line.split(" ", 3)[1:3] == ["INFO", "tocsin.x"]
