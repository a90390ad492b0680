"""A small HTTP/2 client on the `h2` library: one kept TLS connection to one origin that
carries many requests at once, each on its own stream (what APNs asks of its providers).

Why not httpx's HTTP/2: with 256 sends in flight its connection pool and anyio layers cost
~1 ms of CPU a request, where this costs a fraction of it (docs/channels.md#apns). h2 does
the protocol (framing, HPACK, flow control's bookkeeping, stream states); this module only
moves its bytes over an asyncio transport and matches responses to the requests waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import hpack
from hpack.hpack import encode_integer
from hpack.table import HeaderTable

Header = tuple[str, str] | hpack.HeaderTuple
Headers = Sequence[Header]
# Header values unique to each request (a path with a device token, an id): sent without
# adding them to HPACK's table, where they would only push out the values that repeat and
# make every later lookup (a linear scan of the table) longer.
Unique = hpack.NeverIndexedHeaderTuple
# Connections per origin at most: another is opened only while all those open carry as many
# streams as the server allows (APNs allows 1,000 a connection; Apple asks providers to keep
# a few connections rather than open one per push).
MAX_CONNECTIONS = 4


class HTTP2Error(Exception):
    """The request failed in transport (connection lost, stream reset, not HTTP/2)."""


class NotProcessed(HTTP2Error):
    """The server says it did not process the request (GOAWAY past it, REFUSED_STREAM): it
    may be sent again on another connection."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class _Stream:
    done: asyncio.Future[Response]
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: list[bytes] = field(default_factory=list)


class Origin:
    """Requests to one `https://host[:port]` origin over kept HTTP/2 connections: one, opened
    on first use, and more (up to `max_connections`) only while every one open carries as
    many streams as the server allows (SETTINGS_MAX_CONCURRENT_STREAMS). Each request goes to
    the connection with the fewest streams open; one lost or sent GOAWAY is replaced."""

    def __init__(
        self, base_url: str, tls: ssl.SSLContext, *, max_connections: int = MAX_CONNECTIONS
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"not an https:// URL: {base_url}")
        self.host = parts.hostname
        self.port = parts.port or 443
        self.authority = parts.netloc
        self._tls = tls
        self._max_connections = max(1, max_connections)
        self._connections: list[_Connection] = []
        self._opening = asyncio.Lock()
        self.connections_opened = 0

    async def request(self, method: str, path: str, headers: Headers, body: bytes) -> Response:
        """Send one request and wait for its whole response. Raises HTTP2Error or OSError;
        cancelling it resets its stream and leaves the connection to the others."""
        connection = await self._connected()
        try:
            return await connection.request(method, path, headers, body)
        except NotProcessed:
            # Nothing was done with it: once more, on a connection opened for it.
            connection = await self._connected()
            return await connection.request(method, path, headers, body)

    async def _connected(self) -> _Connection:
        connection = self._least_busy()
        if connection is not None and self._enough(connection):
            return connection
        async with self._opening:  # one connection opened at a time; the others wait
            connection = self._least_busy()
            if connection is not None and self._enough(connection):
                return connection
            connection = await self._open()
            self._connections.append(connection)
            return connection

    def _least_busy(self) -> _Connection | None:
        connections = self._connections
        if not all(c.usable for c in connections):
            connections = self._connections = [c for c in connections if c.usable]
        if len(connections) == 1:
            return connections[0]
        return min(connections, key=_Connection.open_count, default=None)

    def _enough(self, connection: _Connection) -> bool:
        """Whether to use `connection` rather than open another."""
        return connection.has_room() or len(self._connections) >= self._max_connections

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            lambda: _Connection(self.authority), self.host, self.port, ssl=self._tls
        )
        self.connections_opened += 1
        if connection.protocol_negotiated != "h2":
            connection.close()
            raise HTTP2Error(f"{self.authority} does not speak HTTP/2 (ALPN)")
        return connection

    async def close(self) -> None:
        for connection in self._connections:
            connection.close()
        self._connections = []


class _Connection(asyncio.Protocol):
    """One HTTP/2 connection: h2's state machine fed by an asyncio transport."""

    def __init__(self, authority: str) -> None:
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding="latin-1",
            # The callers build their headers from validated values; h2's checks of each
            # outgoing header cost more than the rest of sending it.
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            # Of a response only the status and a few named headers are read; h2's checks
            # of every response header (pseudo-headers, characters, cookies) cost a tenth of
            # a request, for nothing that would change what is read.
            validate_inbound_headers=False,
            normalize_inbound_headers=False,
        )
        self._h2 = _H2Client(config=config)
        self._h2.encoder = _LiteralEncoder()
        self._authority = authority
        self._transport: asyncio.Transport | None = None
        self._streams: dict[int, _Stream] = {}
        self._changed = asyncio.Event()  # a stream closed, a window opened, settings changed
        self._closed = False
        self._going_away = False
        self._flush_pending = False
        self.protocol_negotiated: str | None = None

    @property
    def usable(self) -> bool:
        return not (self._closed or self._going_away)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        ssl_object = transport.get_extra_info("ssl_object")
        self.protocol_negotiated = ssl_object.selected_alpn_protocol() if ssl_object else None
        self._h2.initiate_connection()
        self._flush()

    async def request(self, method: str, path: str, headers: Headers, body: bytes) -> Response:
        stream_id = await self._open_stream(method, path, headers, body)
        stream = self._streams[stream_id]
        try:
            await self._send_body(stream_id, body, stream)
            return await stream.done
        except h2.exceptions.H2Error as error:
            raise HTTP2Error(f"{type(error).__name__}: {error}") from None
        finally:
            self._end_stream(stream_id)

    async def _open_stream(self, method: str, path: str, headers: Headers, body: bytes) -> int:
        while not self.has_room():
            await self._wait_for_change()
        if not self.usable:
            raise NotProcessed("connection closing")
        try:
            stream_id = self._h2.get_next_available_stream_id()
        except h2.exceptions.NoAvailableStreamIDError:
            self._going_away = True  # every stream id used: the next request opens another
            raise NotProcessed("stream ids used up") from None
        request_headers: list[Header] = [
            (":method", method),
            (":scheme", "https"),
            (":authority", self._authority),
            Unique(":path", path),
            *headers,
        ]
        self._h2.send_headers(stream_id, request_headers, end_stream=not body)
        self._streams[stream_id] = _Stream(done=asyncio.get_running_loop().create_future())
        self._flush_soon()
        return stream_id

    def open_count(self) -> int:
        return len(self._streams)

    def has_room(self) -> bool:
        """Whether the server allows one more stream now."""
        return len(self._streams) < self._h2.remote_settings.max_concurrent_streams

    async def _send_body(self, stream_id: int, body: bytes, stream: _Stream) -> None:
        while body and not stream.done.done():
            window = min(
                self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size
            )
            if window <= 0:
                await self._wait_for_change()
                continue
            chunk, body = body[:window], body[window:]
            self._h2.send_data(stream_id, chunk, end_stream=not body)
        self._flush_soon()

    async def _wait_for_change(self) -> None:
        if self._closed:
            raise HTTP2Error("connection lost")
        self._changed.clear()
        await self._changed.wait()

    def _end_stream(self, stream_id: int) -> None:
        stream = self._streams.pop(stream_id, None)
        if stream is not None and stream.done.done() and not stream.done.cancelled():
            stream.done.exception()  # seen: asyncio need not report it as never retrieved
        elif stream is not None and not self._closed:
            # Abandoned (cancelled, timed out): tell the server, keep the connection.
            with contextlib.suppress(h2.exceptions.H2Error):  # unless it closed meanwhile
                self._h2.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
            self._flush()
        self._changed.set()
        if self._going_away and not self._streams:
            self.close()

    def data_received(self, data: bytes) -> None:
        try:
            events = self._h2.receive_data(data)
        except h2.exceptions.ProtocolError as error:
            self._fail_all(HTTP2Error(f"protocol error: {error}"))
            self.close()
            return
        for event in events:
            self._handle(event)
        self._flush()

    def _handle(self, event: h2.events.Event) -> None:
        stream = self._streams.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, h2.events.ResponseReceived) and stream is not None:
            for name, value in event.headers or ():
                stream.headers[str(name)] = str(value)
            stream.status = int(stream.headers.get(":status", "0"))
        elif isinstance(event, h2.events.DataReceived):
            self._h2.acknowledge_received_data(
                event.flow_controlled_length or 0, event.stream_id or 0
            )
            if stream is not None:
                stream.body.append(event.data or b"")
        elif isinstance(event, h2.events.StreamEnded) and stream is not None:
            _finish(stream)
        elif isinstance(event, h2.events.StreamReset) and stream is not None:
            refused = event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM
            kind = NotProcessed if refused else HTTP2Error
            _fail(stream, kind(f"stream reset by the server ({event.error_code!r})"))
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._going_away = True
            self._fail_unprocessed(event.last_stream_id or 0)
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._changed.set()

    def _fail_unprocessed(self, last_stream_id: int) -> None:
        for stream_id, stream in self._streams.items():
            if stream_id > last_stream_id:
                _fail(stream, NotProcessed("GOAWAY"))

    def _fail_all(self, error: HTTP2Error) -> None:
        for stream in self._streams.values():
            _fail(stream, error)
        self._changed.set()

    def _flush_soon(self) -> None:
        """Write what h2 has to send once this turn of the event loop is over: the requests
        of every task that runs in it go out in one write (one TLS record, one system call)
        rather than one each."""
        if not self._flush_pending:
            self._flush_pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        data = self._h2.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._fail_all(HTTP2Error(f"connection lost: {exc or 'closed by the server'}"))

    def close(self) -> None:
        if self._transport is not None and not self._closed:
            with contextlib.suppress(h2.exceptions.H2Error):  # a GOAWAY, if it still can
                self._h2.close_connection()
                self._flush()
            self._transport.close()
        self._closed = True


def _finish(stream: _Stream) -> None:
    if not stream.done.done():
        stream.done.set_result(
            Response(status=stream.status, headers=stream.headers, body=b"".join(stream.body))
        )


def _fail(stream: _Stream, error: HTTP2Error) -> None:
    if not stream.done.done():
        stream.done.set_exception(error)


class _LiteralEncoder(hpack.Encoder):
    """HPACK that never adds to the dynamic table: every header is a literal (its name by
    static-table index when it has one), without Huffman coding, and the encoded form of each
    header that is not `Unique` is cached, so a request's constant headers cost a dictionary
    lookup each. A request carries some 300 bytes more than with indexing, which nothing
    notices; the table's linear searches and Huffman's bit-by-bit Python loop were most of a
    request's cost in h2 (docs/channels.md#apns)."""

    CACHE_LIMIT = 1024  # encoded headers kept; `apns-expiration` takes a new value a second

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict[tuple[bytes, bytes], bytes] = {}

    def encode(self, headers: Any, huffman: bool = False) -> bytes:
        block = bytearray()
        if self.header_table.resized:  # the server lowered the table size: say so first
            block += self._encode_table_size_change()
            self.header_table.resized = False
        cache = self._cache
        for header in headers:
            if not getattr(header, "indexable", True):  # `Unique`: hpack's never-indexed
                block += _literal(header[0], header[1], NEVER_INDEXED)
                continue
            key = (header[0], header[1])
            encoded = cache.get(key)
            if encoded is None:
                if len(cache) >= self.CACHE_LIMIT:
                    cache.clear()
                encoded = cache[key] = _literal(key[0], key[1], WITHOUT_INDEXING)
            block += encoded
        return bytes(block)


WITHOUT_INDEXING = 0x00  # RFC 7541 6.2.2
NEVER_INDEXED = 0x10  # RFC 7541 6.2.3
_STATIC_NAMES: dict[bytes, int] = {}
for _index, (_name, _) in enumerate(HeaderTable.STATIC_TABLE, start=1):
    _STATIC_NAMES.setdefault(_name, _index)


def _literal(name: bytes, value: bytes, kind: int) -> bytes:
    """A literal header field, not entering the table; its name by index when static."""
    index = _STATIC_NAMES.get(name, 0)
    encoded = encode_integer(index, 4)
    encoded[0] |= kind
    if not index:
        encoded += _string(name)
    encoded += _string(value)
    return bytes(encoded)


def _string(text: bytes) -> bytearray:
    """An HPACK string literal, not Huffman coded (RFC 7541 5.2)."""
    return encode_integer(len(text), 7) + text


class _H2Client(h2.connection.H2Connection):
    """h2's connection, counting its open streams less often.

    h2 counts the open streams by walking all of them (and drops the closed ones from its
    table as it goes) each time a request opens a stream: with hundreds in flight that walk
    was an eighth of a request's cost. `_Connection` already keeps within the server's limit
    before opening a stream, so here the walk is done only every `SWEEP_EVERY` streams, to
    keep the table small; in between h2's own check is told no stream is open."""

    SWEEP_EVERY = 64
    _opened = 0

    @property
    def open_outbound_streams(self) -> int:
        self._opened += 1
        if self._opened % self.SWEEP_EVERY:
            return 0
        return super().open_outbound_streams
