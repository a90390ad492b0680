"""Text from outside — a provider's answer, a response header, an exception's message — made
safe to keep where it enters: in a result, in the database, in a log line.

A provider may answer anything: a NUL (which PostgreSQL's `jsonb` and `text` refuse), bytes
that are not UTF-8 (which aiohttp and aiosmtplib keep as lone surrogates, and which no JSON
encoder writes), line breaks that forge log lines, terminal escapes, or a page of megabytes.
Each channel passes what it keeps of an answer through `outside_text` once, so nothing past
the channel has to wonder.
"""

from __future__ import annotations

import re

MAX_TEXT = 200  # characters of an answer kept in an error: enough to say what went wrong
MAX_ID = 500  # characters of a provider's id for a message (a Web Push `Location` is a URL)

_SPACES = re.compile("[\t\n\v\f\r\x1c-\x1f\x85\u2028\u2029 ]+")
# The rest of Unicode's controls (Cc), lone surrogates (a JSON "\ud800", or bytes kept with
# surrogateescape) and the bidirectional overrides and isolates, which reorder what a
# terminal shows.
_UNSAFE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_REPLACEMENT = "\ufffd"


def outside_text(value: object, limit: int = MAX_TEXT) -> str:
    """`value` (bytes read as UTF-8, anything else as `str` gives it) as text any part of
    Tocsin can keep: strict UTF-8 (bytes that are not, and lone surrogates, become U+FFFD),
    no control character (a run of line breaks, tabs and spaces becomes one space, any other
    control U+FFFD, as do the bidirectional overrides), no space at either end, and at most
    `limit` characters (cut with "…"). Printable text within the limit comes out as it went
    in; cleaning twice changes nothing more. Only the first `4 * limit` bytes or characters
    are read, however long `value` is."""
    bound = 4 * limit
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value[:bound])
        text, cut = raw.decode("utf-8", "replace"), len(value) > bound
    else:
        whole = value if isinstance(value, str) else str(value)
        text, cut = whole[:bound], len(whole) > bound
    if not cut and len(text) <= limit and text.isprintable() and text == text.strip():
        return text  # the common answer: nothing to do
    text = _UNSAFE.sub(_REPLACEMENT, _SPACES.sub(" ", text)).strip()
    if cut or len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
