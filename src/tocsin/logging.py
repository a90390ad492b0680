"""Structured logging on the standard library: each record's `extra` fields become keys.

Two line formats: `kv` (`2026-10-26T13:00:00.123Z INFO tocsin.api request method=POST
status=201`) for people, `json` (one object a line) for log collectors. In both, a record is
one line whatever its message and fields hold (a provider's answer, a reminder's text): in
`kv`, line breaks and other control characters are written as escapes (`\\n`, `\\x00`)
and a traceback's lines are indented under their record, so nothing logged can pass for a
record of its own; `json` escapes them as JSON does.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

FORMATS = ("kv", "json")
# Attributes every LogRecord has: anything else on a record came from `extra`.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's copy of the message with terminal colours
}


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The `extra` fields a record was logged with."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _timestamp(record: logging.LogRecord) -> str:
    instant = datetime.fromtimestamp(record.created, UTC)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class KeyValueFormatter(logging.Formatter):
    """`time LEVEL logger message key=value …`, values quoted when they hold spaces; a
    traceback follows on lines of its own, each indented."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname, record.name, escaped(record.getMessage())]
        parts += [f"{escaped(k)}={_quote(v)}" for k, v in fields_of(record).items()]
        line = " ".join(parts)
        if record.exc_info:
            lines = self.formatException(record.exc_info).splitlines()
            line += "".join(f"\n  {escaped(text)}" for text in lines)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and every extra field."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **fields_of(record),
        }
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


# What a terminal or a reader of the log would take for the end of a line, or act on: the
# controls (Cc, including the separators str.splitlines breaks at), the line and paragraph
# separators, the bidirectional overrides, and lone surrogates (no stream encodes them).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


def escaped(text: str) -> str:
    """`text` on one line: every character that could break it or act on a terminal written
    as an escape (`\\n`, `\\x00`, `\\u202e`); printable text as it is."""
    return text if text.isprintable() else _UNSAFE.sub(_escape, text)


def _quote(value: object) -> str:
    text = str(value)
    if not text or not text.isprintable() or any(c in text for c in ' "='):
        return json.dumps(text)  # ASCII only: every escape JSON has
    return text


def configure_logging(level: str = "INFO", fmt: str = "kv") -> None:
    """Send every log line (ours, uvicorn's) to stderr in one format."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # `tocsin.api.access` says more
