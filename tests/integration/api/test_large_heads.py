"""A request's head has a size: 8 KiB a line, 32 KiB in all, 100 header fields; over them the
answer is 431 (414 for the request line) and the connection is closed, before the head is
buffered; a head just within them is answered, and a body is not measured as a head.

Through `tocsin serve`, `tocsin api --workers 2` and a worker's metrics port on real sockets,
their memory read from /proc; then over each of uvicorn's HTTP protocols in this process.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.e2e.workers import workers
from tests.integration.api.test_serve import _children
from tests.integration.api.test_slow_clients import PROTOCOLS, serving
from tests.support.processes import clean_env, free_port, running
from tocsin.heads import HEAD_LIMITS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

WITHIN = 20.0  # seconds for an answer; a refusal comes at once, a loaded machine is slow
BIG = 8_000_000  # bytes of one header line, as it was tried from outside
START = b"GET /healthz HTTP/1.1\r\n"
CLOSE = b"Host: localhost\r\nConnection: close\r\n"
# Memory a server may keep after the oversized heads: before the limit, it kept about 13 MB
# for each 8 MB head (5.4 GB after 20 s of two connections looping them).
KEPT_AT_MOST = 64 * 2**20


def head(*lines: bytes, start: bytes = START) -> bytes:
    return start + CLOSE + b"".join(lines) + b"\r\n"


def line(size: int, name: bytes = b"X-Pad") -> bytes:
    """A header line of `size` bytes, its CRLF included."""
    return name + b": " + b"a" * (size - len(name) - 4) + b"\r\n"


def request_line(size: int) -> bytes:
    """A request line for /healthz of `size` bytes, its CRLF included."""
    return b"GET /healthz?q=" + b"a" * (size - 26) + b" HTTP/1.1\r\n"


def filled(total: int) -> bytes:
    """A head of `total` bytes in all, of lines within the limit."""
    room = total - len(head())
    lines = [line(8000, b"X-Fill-%d" % n) for n in range(room // 8000)]
    if room % 8000:
        lines.append(line(room % 8000, b"X-Rest"))
    made = head(*lines)
    assert len(made) == total
    return made


def fields(count: int) -> bytes:
    """A head of `count` header fields (Host and Connection among them)."""
    return head(*(b"X-Field-%d: x\r\n" % n for n in range(count - 2)))


async def exchange(port: int, request: bytes) -> bytes:
    """Everything the server answers to `request` until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        return await asyncio.wait_for(reader.read(), WITHIN)
    finally:
        writer.close()


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    """One answer of a kept-alive connection, its body read by its Content-Length."""
    answer_head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WITHIN)
    length = next(
        int(value)
        for name, _, value in (h.partition(b":") for h in answer_head.split(b"\r\n"))
        if name.lower() == b"content-length"
    )
    return answer_head + await asyncio.wait_for(reader.readexactly(length), WITHIN)


def status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer[9:12])


def problem(answer: bytes) -> dict[str, object]:
    answer_head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in answer_head.lower()
    found: dict[str, object] = orjson.loads(body)
    return found


async def check_the_limits(port: int) -> None:
    """Each limit, just within it and just over it, on a server at `port`."""
    limits = HEAD_LIMITS
    within = [
        head(line(limits.line_bytes)),
        head(start=request_line(limits.line_bytes)),
        filled(limits.head_bytes),
        fields(limits.fields),
    ]
    over = [
        head(line(limits.line_bytes + 1)),
        head(start=request_line(limits.line_bytes + 1)),
        filled(limits.head_bytes + 1),
        fields(limits.fields + 1),
    ]
    assert [status(await exchange(port, request)) for request in within] == [200] * 4
    refused = [await exchange(port, request) for request in over]
    assert [status(answer) for answer in refused] == [431, 414, 431, 431]
    assert [problem(answer)["type"] for answer in refused] == [
        "urn:tocsin:problem:header-too-large",
        "urn:tocsin:problem:uri-too-long",
        "urn:tocsin:problem:header-too-large",
        "urn:tocsin:problem:header-too-large",
    ]


async def check_a_body_is_not_a_head(port: int, path: bytes, body: bytes) -> list[int]:
    """A POST of `body` (longer than any head), then on the same connection a head over the
    limit: the statuses of both answers, and that the connection was closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (path, len(body), body)
        )
        first = status(await read_answer(reader))
        writer.write(head(line(BIG)))
        second = status(await asyncio.wait_for(reader.read(), WITHIN))
    finally:
        writer.close()
    return [first, second]


async def oversized(port: int, count: int) -> list[int]:
    """The statuses of `count` requests of an 8 MB header, one after the other, each on a
    connection of its own read until the server closes it."""
    return [status(await exchange(port, head(line(BIG)))) for _ in range(count)]


async def check_oversized_heads_are_refused(port: int, memory: Callable[[], int]) -> None:
    """Two connections at a time sending 8 MB headers are refused, while another client is
    answered, and the server keeps little memory after them."""
    before = memory()
    refused, healthy = await asyncio.gather(
        asyncio.gather(oversized(port, 12), oversized(port, 12)),
        exchange(port, head()),
    )
    assert [set(statuses) for statuses in refused] == [{431}, {431}]
    assert status(healthy) == 200
    assert status(await exchange(port, head())) == 200
    kept = memory() - before
    assert kept < KEPT_AT_MOST, f"the server kept {kept / 2**20:.0f} MiB"


def _rss(pid: int) -> int:
    """The resident memory of process `pid` (0 when it is gone)."""
    try:
        status_lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    kib = next(int(s.split()[1]) for s in status_lines if s.startswith("VmRSS:"))
    return kib * 1024


def memory_of(pid: int) -> Callable[[], int]:
    """The resident memory of process `pid` and its children (`tocsin api --workers`)."""
    return lambda: sum(_rss(member) for member in {pid, *_children(pid)})


def _port(base: str) -> int:
    return int(base.rpartition(":")[2])


# -- through the commands ---------------------------------------------------------------------

CREATE = orjson.dumps(
    {"owner": "ana", "text": "x", "at": "in 10 minutes", "zone": "UTC", "channel": "log"}
)
LONG_BODY = CREATE + b"\n" * 50_000  # JSON may end in white space; no head is this long


async def test_tocsin_serve_refuses_a_head_too_large(tmp_path: Path) -> None:
    with running("serve", "--db", str(tmp_path / "tocsin.db")) as (base, process):
        port = _port(base)
        await check_oversized_heads_are_refused(port, memory_of(process.pid))
        await check_the_limits(port)
        assert await check_a_body_is_not_a_head(port, b"/v1/reminders", LONG_BODY) == [201, 431]


@pytest.mark.postgres
async def test_tocsin_api_and_a_workers_metrics_port_refuse_a_head_too_large(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    metrics = free_port()
    env = clean_env(TMPDIR=str(tmp_path))
    with (
        running("api", "--workers", "2", "--db", pg_migrated_url, env=env) as (base, process),
        workers(tmp_path) as started,
    ):
        port = _port(base)
        await check_oversized_heads_are_refused(port, memory_of(process.pid))
        await check_the_limits(port)
        assert await check_a_body_is_not_a_head(port, b"/v1/reminders", LONG_BODY) == [201, 431]

        worker = started.start(pg_migrated_url, "w1", "--metrics-port", str(metrics))
        await _until_up(metrics)
        await check_oversized_heads_are_refused(metrics, memory_of(worker.process.pid))
        await check_the_limits(metrics)


async def _until_up(port: int) -> None:
    for _ in range(int(WITHIN / 0.1)):
        try:
            if status(await exchange(port, head())) == 200:
                return
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"nothing answered on port {port}")


# -- each of uvicorn's protocols, in this process ---------------------------------------------


@PROTOCOLS
async def test_the_limits_hold_over_either_protocol(
    base: Callable[..., asyncio.Protocol],
) -> None:
    async with serving(base, cap=0) as port:
        await check_the_limits(port)
        assert await check_a_body_is_not_a_head(port, b"/x", b"x" * 100_000) == [200, 431]
