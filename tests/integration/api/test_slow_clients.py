"""Slow clients and many connections: a request's head and body each have a deadline, one
address holds a capped number of connections, and an open feed outlives both deadlines.

Through `tocsin serve` on real sockets, then `tocsin.api.connections` over each of uvicorn's
HTTP protocols in this process (httptools is what `tocsin serve` runs; h11 where httptools is
not installed). The deadlines are 2 s and each test allows 20 s for a close, and 1 s for it
not to come: a loaded machine may be late by seconds, never early.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from starlette.types import Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tests.support.processes import clean_env, running
from tocsin.api.connections import ConnectionLimits, guarded
from tocsin.heads import HEAD_LIMITS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="connects from 127.0.0.2 and 127.0.0.3"
    ),
]

CLOSE_WITHIN = 20.0  # seconds; far above any deadline here
FAST = {
    "TOCSIN_CLIENT_HEADER_TIMEOUT_SECONDS": "2",
    "TOCSIN_CLIENT_BODY_TIMEOUT_SECONDS": "2",
    "TOCSIN_FEED_HEARTBEAT_SECONDS": "1",
}
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
# Sent a byte a half second: about 30 s, longer than any wait here, unless the server cuts it.
SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: " + b"a" * 10 + b"\r\n\r\n"
SLOW_BODY = b'{"owner": "ana", "text": "' + b"x" * 60 + b'"}'
POST_HEAD = (
    b"POST /v1/reminders HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(SLOW_BODY)
)


@dataclass
class Cut:
    """How a trickling connection ended."""

    seconds: float  # from connecting to the server's close (or to giving up)
    closed: bool
    answer: bytes


async def trickle(port: int, at_once: bytes, slowly: bytes, *, pause: float = 0.5) -> Cut:
    """Send `at_once`, then `slowly` a byte each `pause`, until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    began = time.monotonic()
    answer, closed = b"", False
    try:
        writer.write(at_once)
        for byte in slowly:
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                chunk = await asyncio.wait_for(reader.read(4096), pause)
            except TimeoutError:
                continue
            answer += chunk
            if not chunk:
                closed = True
                break
    except ConnectionError:
        closed = True
    finally:
        writer.close()
    return Cut(seconds=time.monotonic() - began, closed=closed, answer=answer)


async def exchange(port: int, request: bytes, *, source: str = "127.0.0.1") -> bytes:
    """What the server answers to `request` (with `Connection: close`) before it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        writer.write(request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1))
        return await asyncio.wait_for(reader.read(), CLOSE_WITHIN)
    except ConnectionError:
        return b""
    finally:
        writer.close()


class Stream:
    """An open `text/event-stream` (or any streamed) answer, read as it comes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, path: str, *, source: str = "127.0.0.1") -> Stream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLOSE_WITHIN)
        assert head.startswith(b"HTTP/1.1 200"), head
        return cls(reader, writer)

    async def more(self) -> bytes:
        """Bytes written after everything read so far: still open, still written to."""
        while True:  # drop what is buffered already
            try:
                chunk = await asyncio.wait_for(self.reader.read(65536), 0.1)
            except TimeoutError:
                break
            assert chunk, "the stream was closed"
        chunk = await asyncio.wait_for(self.reader.read(65536), CLOSE_WITHIN)
        assert chunk, "the stream was closed"
        return chunk

    def close(self) -> None:
        self.writer.close()


def _port(base: str) -> int:
    return int(base.rpartition(":")[2])


def assert_cut(cut: Cut) -> None:
    assert cut.closed, f"still open after {cut.seconds:.0f} s"
    assert 1.0 <= cut.seconds < CLOSE_WITHIN


async def _answered(ask: Callable[[], Awaitable[bytes]]) -> bytes:
    """`ask`'s first answer, asked again while it gets none (a connection just closed is
    counted until the server has seen it close)."""
    give_up = time.monotonic() + CLOSE_WITHIN
    answer = b""
    while not answer and time.monotonic() < give_up:
        answer = await ask()
    return answer


# -- through `tocsin serve` -------------------------------------------------------------------


async def test_a_slow_head_or_body_is_cut_off_and_an_open_feed_is_not(tmp_path: Path) -> None:
    env = clean_env(**FAST)
    with running("serve", "--db", str(tmp_path / "tocsin.db"), env=env) as (base, _):
        port = _port(base)
        feed = await Stream.open(port, "/v1/owners/ana/feed")
        opened = time.monotonic()
        head, body, next_head = await asyncio.gather(
            trickle(port, b"", SLOW_HEAD),
            trickle(port, POST_HEAD, SLOW_BODY),
            trickle(port, HEALTHZ, SLOW_HEAD),  # a keep-alive connection's next request
        )
        await asyncio.sleep(max(0.0, opened + 6 - time.monotonic()))  # three times a deadline
        beat = await feed.more()
        feed.close()

    assert_cut(head)
    assert head.answer == b""
    assert_cut(body)
    assert body.answer == b""  # no 201: the reminder was never made
    assert_cut(next_head)
    assert next_head.answer.startswith(b"HTTP/1.1 200")  # the first request, answered
    assert next_head.answer.count(b"HTTP/1.1") == 1
    assert b": keep-alive" in beat


async def test_connections_over_the_cap_of_one_address_are_closed(tmp_path: Path) -> None:
    env = clean_env(TOCSIN_CONNECTIONS_PER_ADDRESS="3", TOCSIN_TRUSTED_PROXIES="127.0.0.3", **FAST)
    with running("serve", "--db", str(tmp_path / "tocsin.db"), env=env) as (base, _):
        port = _port(base)
        feeds = [await Stream.open(port, f"/v1/owners/o{n}/feed") for n in range(3)]
        over = await exchange(port, HEALTHZ)
        elsewhere = await exchange(port, HEALTHZ, source="127.0.0.2")
        # Every client behind a trusted proxy arrives from it: the proxy is not capped.
        behind_a_proxy = [
            await Stream.open(port, f"/v1/owners/p{n}/feed", source="127.0.0.3") for n in range(5)
        ]
        feeds.pop().close()
        again = await _answered(lambda: exchange(port, HEALTHZ))
        still = [await stream.more() for stream in feeds + behind_a_proxy]
        for stream in feeds + behind_a_proxy:
            stream.close()

    assert over == b""  # closed unanswered
    assert elsewhere.startswith(b"HTTP/1.1 200")
    assert again.startswith(b"HTTP/1.1 200")
    assert all(b": keep-alive" in beat for beat in still)


# -- each of uvicorn's protocols, in this process ---------------------------------------------


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    """`/stream`: an answer that never ends by itself; any other path reads the body, then
    answers 200."""
    assert scope["type"] == "http"
    if scope["path"] == "/stream":
        await _stream(receive, send)
        return
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        if not message.get("more_body", False):
            break
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


async def _stream(receive: Receive, send: Send) -> None:
    gone = asyncio.Event()

    async def watch() -> None:
        message: Message = await receive()
        while message["type"] != "http.disconnect":
            message = await receive()
        gone.set()

    watcher = asyncio.create_task(watch())
    await send({"type": "http.response.start", "status": 200, "headers": []})
    while not gone.is_set():
        await send({"type": "http.response.body", "body": b": beat\n\n", "more_body": True})
        await asyncio.sleep(0.2)
    await watcher


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.up = asyncio.Event()

    @contextmanager
    def capture_signals(self) -> Iterator[None]:  # the test's process keeps its own
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.up.set()


@asynccontextmanager
async def serving(base: Callable[..., asyncio.Protocol], cap: int) -> AsyncIterator[int]:
    """A uvicorn server over `base` under 2 s deadlines, `cap` and the heads' limits, as
    `tocsin serve` runs it; its port."""
    limits = ConnectionLimits(head_seconds=2, body_seconds=2, per_address=cap)
    config = uvicorn.Config(
        _app,
        log_config=None,
        lifespan="off",
        proxy_headers=False,
        ws="none",
        http=guarded(limits, base),
        h11_max_incomplete_event_size=HEAD_LIMITS.head_bytes,  # as `tocsin serve` sets it
        timeout_graceful_shutdown=1,
    )
    server = _Server(config)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        await asyncio.wait_for(server.up.wait(), CLOSE_WITHIN)
        try:
            yield sock.getsockname()[1]
        finally:
            server.should_exit = True
            await task


PROTOCOLS = pytest.mark.parametrize(
    "base", [HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"]
)


@PROTOCOLS
async def test_the_deadlines_hold_over_either_protocol(
    base: Callable[..., asyncio.Protocol],
) -> None:
    post = b"POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 60\r\n\r\n"
    async with serving(base, cap=0) as port:
        stream = await Stream.open(port, "/stream")
        opened = time.monotonic()
        cuts = await asyncio.gather(
            trickle(port, b"", SLOW_HEAD),
            trickle(port, post, b"x" * 60),
            trickle(port, HEALTHZ, SLOW_HEAD),
        )
        quick = await exchange(port, post + b"x" * 60)
        await asyncio.sleep(max(0.0, opened + 6 - time.monotonic()))  # three times a deadline
        beat = await stream.more()
        stream.close()

    for cut in cuts:
        assert_cut(cut)
    assert [cut.answer.count(b"HTTP/1.1 200") for cut in cuts] == [0, 0, 1]
    assert quick.startswith(b"HTTP/1.1 200")
    assert b": beat" in beat


@PROTOCOLS
async def test_the_cap_holds_over_either_protocol(base: Callable[..., asyncio.Protocol]) -> None:
    async with serving(base, cap=2) as port:
        streams = [await Stream.open(port, "/stream") for _ in range(2)]
        over = await exchange(port, HEALTHZ)
        elsewhere = await exchange(port, HEALTHZ, source="127.0.0.2")
        streams.pop().close()
        again = await _answered(lambda: exchange(port, HEALTHZ))
        for stream in streams:
            stream.close()

    assert over == b""
    assert elsewhere.startswith(b"HTTP/1.1 200")
    assert again.startswith(b"HTTP/1.1 200")
