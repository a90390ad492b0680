"""The size of a request's head (its request line and header lines), measured as its bytes
arrive, so that a head too large is refused before an HTTP server's parser has buffered it.

uvicorn's parsers keep a head whole, however large: httptools appends each piece of a header
value to the one before, so two connections looping 8 MB headers took a server from 126 MB to
5.4 GB, never given back, and a 64 MB header was answered 200. aiohttp (a worker's metrics
port) refuses a long line, but logs a traceback for each read that follows it. The limits are
nginx's defaults (`large_client_header_buffers 4 8k`: a line fits in 8 KiB, a head in four of
them), with Apache's cap on the number of header fields (`LimitRequestFields 100`).

`HeadGuard` stands between a connection and a server's HTTP protocol: every read while a
head is expected is measured before the protocol sees it, and the head that ends in a read
is passed on alone, so that the next head is measured from its first byte. A head over its
limits is answered 431 (414 for its request line) and the connection closed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import cast

import orjson

log = logging.getLogger("tocsin.heads")

# A refused client may still be sending its head: what it sends is read and dropped this
# long, since closing a socket with unread bytes resets the connection, and the client may
# lose the answer before it has read it (nginx's lingering close).
LINGER_SECONDS = 2.0


@dataclass(frozen=True, kw_only=True, slots=True)
class HeadLimits:
    """How large a request's head may be. Each size counts a line's line break too."""

    line_bytes: int = 8 * 1024  # the request line, and each header line
    head_bytes: int = 32 * 1024  # every line, the blank one that ends the head included
    fields: int = 100  # header lines


HEAD_LIMITS = HeadLimits()


class HeadTooLarge(Exception):
    """A head over one of its limits: `status` is 414 for the request line, else 431."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail

    def answer(self) -> bytes:
        """The whole HTTP answer, closing the connection: a problem (RFC 9457), the shape of
        every error of the API."""
        title = "URI Too Long" if self.status == 414 else "Request Header Fields Too Large"
        slug = "uri-too-long" if self.status == 414 else "header-too-large"
        problem = {"type": f"urn:tocsin:problem:{slug}", "title": title, "status": self.status}
        body = orjson.dumps(problem | {"detail": self.detail})
        return (
            f"HTTP/1.1 {self.status} {title}\r\ncontent-type: application/problem+json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode("ascii") + body


class HeadMeter:
    """One connection's head being read: its bytes, its lines, and the line in progress.

    `feed` takes each read while a head is expected, and finds where the head ends (its
    first empty line: CRLF CRLF, or the bare LF that h11 accepts too), across reads."""

    def __init__(self, limits: HeadLimits = HEAD_LIMITS) -> None:
        self._limits = limits
        self.reset()

    def reset(self) -> None:
        """Expect a new head."""
        self._size = 0  # bytes of the head before this read
        self._lines = 0  # complete lines
        self._line = 0  # bytes of the line in progress
        self._tail = b""  # the last bytes read, to find an end split between two reads

    def feed(self, data: bytes) -> int:
        """Where in `data` the head ends (the index just past it), or -1 when it goes on
        beyond `data`; `HeadTooLarge` once what was read of it is over a limit, even though
        it has not ended."""
        end = self._end(data)
        limits = self._limits
        if not self._size and 0 <= end <= limits.line_bytes:
            # A whole head in one read, no longer than a line may be: only its count to check.
            if data.count(b"\n", 0, end) > limits.fields + 2:
                raise self._too_many()
            return end
        upto = len(data) if end < 0 else end
        self._measure(data, upto)
        self._size += upto
        if self._size > limits.head_bytes:
            raise HeadTooLarge(431, f"the request's head is over {limits.head_bytes} bytes")
        self._tail = (self._tail + data)[-3:] if end < 0 else b""
        return end

    def _end(self, data: bytes) -> int:
        seen = len(self._tail)
        window = self._tail + data if seen else data
        ends = [at + 2 for at in (window.find(b"\n\n"),) if at >= 0]
        ends += [at + 3 for at in (window.find(b"\n\r\n"),) if at >= 0]
        return min(ends) - seen if ends else -1

    def _measure(self, data: bytes, upto: int) -> None:
        """Counts the lines in `data[:upto]`, checking each against the limits."""
        at = 0
        while (newline := data.find(b"\n", at, upto)) >= 0:
            self._line += newline + 1 - at
            self._check_line()
            self._lines += 1
            self._line = 0
            if self._lines > self._limits.fields + 2:  # the request line and the blank one
                raise self._too_many()
            at = newline + 1
        self._line += upto - at
        self._check_line()

    def _check_line(self) -> None:
        limit = self._limits.line_bytes
        if self._line <= limit:
            return
        if self._lines == 0:
            raise HeadTooLarge(414, f"the request line is over {limit} bytes")
        raise HeadTooLarge(431, f"a header line is over {limit} bytes")

    def _too_many(self) -> HeadTooLarge:
        return HeadTooLarge(431, f"the request has over {self._limits.fields} header fields")


class HeadGuard(asyncio.Protocol):
    """One connection: passes everything to a server's HTTP protocol (`inner`), measuring
    each head first. Every read is taken for a head unless `_in_body` says otherwise (a
    server that reads bodies says where they are; the metrics port takes none)."""

    def __init__(self, inner: asyncio.Protocol, limits: HeadLimits = HEAD_LIMITS) -> None:
        self._inner = inner
        self._meter = HeadMeter(limits)
        self._transport: asyncio.Transport | None = None
        self._host = "-"  # the peer's address, for the log
        self._refused = False  # a head was too large: what follows is dropped until the close
        self._linger: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's are not subclasses of asyncio's, hence no check).
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self._host = str(peer[0]) if isinstance(peer, tuple) else "-"
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        while data and not self._refused:
            if self._in_body():
                self._pass(data)
                return
            try:
                end = self._meter.feed(data)
            except HeadTooLarge as error:
                self._refuse(error)
                return
            if end < 0:
                self._pass(data)
                return
            self._meter.reset()
            head, data = (data, b"") if end == len(data) else (data[:end], data[end:])
            self._pass(head)
            if self._transport is None or self._transport.is_closing():
                return

    def eof_received(self) -> bool | None:
        if self._refused:
            return None  # the client has read the answer and gone: close
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def _in_body(self) -> bool:
        """Whether the bytes that come next belong to a request's body."""
        return False

    def _answering(self) -> bool:
        """Whether an answer to an earlier request is still being written."""
        return False

    def _pass(self, data: bytes) -> None:
        self._inner.data_received(data)

    def _refuse(self, error: HeadTooLarge) -> None:
        """Answers `error` and closes the connection after the linger; at once, unanswered,
        when an answer to an earlier (pipelined) request is still being written."""
        self._refused = True
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        log.info(
            "refusing a request whose head is too large",
            extra={"client": self._host, "status": error.status, "detail": error.detail},
        )
        if self._answering():
            transport.close()
            return
        transport.write(error.answer())
        if transport.can_write_eof():
            transport.write_eof()
        self._linger = asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)
