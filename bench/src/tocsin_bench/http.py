"""A minimal HTTP/1.1 keep-alive client on asyncio streams, for load generation: far less
work per request than a general client, so the load generator takes little of the CPU the
server under test needs (on a 2-core machine they share it)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class HttpError(Exception):
    """The server answered in a way this small client does not read."""


class Connection:
    """One keep-alive connection; one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str):
        self._reader = reader
        self._writer = writer
        self._host = host
        self._last_answer = time.monotonic()

    @classmethod
    async def open(cls, base: str) -> Connection:
        parts = urlsplit(base)
        host = parts.hostname or "127.0.0.1"
        reader, writer = await asyncio.open_connection(host, parts.port or 80)
        return cls(reader, writer, f"{host}:{parts.port}")

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST a JSON body; the status and the response body."""
        head = (
            f"POST {path} HTTP/1.1\r\nhost: {self._host}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        self._writer.write(head.encode() + body)
        answer = await self._response()
        self._last_answer = time.monotonic()
        return answer

    def idle_seconds(self) -> float:
        """How long the connection has waited since its last answer."""
        return time.monotonic() - self._last_answer

    async def _response(self) -> tuple[int, bytes]:
        header = await self._reader.readuntil(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError) as error:
            raise HttpError(f"bad status line {lines[0]!r}") from error
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            lowered = name.strip().lower()
            if lowered == "content-length":
                length = int(value.strip())
            elif lowered == "transfer-encoding":
                raise HttpError("chunked responses are not read by this client")
        body = await self._reader.readexactly(length) if length else b""
        return status, body

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


class IdleConnections:
    """Keep-alive connections waiting for a request, the most recently used first; `take`
    opens a new one when none is waiting.

    One that waited longer than `max_idle` is closed instead of reused: a server closes a
    keep-alive connection idle past its own limit (uvicorn's is 5 s), and a request sent as it
    does so fails without an answer, an error of the load generator and not of the server.
    """

    def __init__(self, base: str, *, max_idle: float = 4.0) -> None:
        self._base = base
        self._max_idle = max_idle
        self._waiting: list[Connection] = []
        self.opened = 0

    async def take(self) -> Connection:
        while self._waiting:
            connection = self._waiting.pop()
            if connection.idle_seconds() <= self._max_idle:
                return connection
            await connection.close()
        self.opened += 1
        return await Connection.open(self._base)

    def put(self, connection: Connection) -> None:
        self._waiting.append(connection)

    async def close(self) -> None:
        while self._waiting:
            await self._waiting.pop().close()


# An open loop keeps at most this many requests out at once (each on its own connection).
MAX_OPEN_CONNECTIONS = 256


@dataclass
class Offered:
    """What an open loop measured: each answer's latency from when its request was due (ms),
    errors by kind (a status, or an exception's name), and the seconds it ran."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    elapsed: float = 0.0
    opened: int = 0

    def count(self, error: str) -> None:
        self.errors[error] = self.errors.get(error, 0) + 1


async def open_loop(
    base: str,
    requests: Sequence[tuple[str, bytes]],
    per_s: float,
    answered: Callable[[int, int, bytes], bool],
) -> Offered:
    """POST `requests` (path, JSON body) `per_s` a second on schedule, each on an idle
    connection (opening one when none is idle), so a slow server cannot hide its queue:
    latency counts from the instant each was due. `answered(n, status, body)` says whether
    the n-th answer is what was asked for; one that is not counts as an error of its status."""
    idle = IdleConnections(base)
    offered = Offered()
    tasks: set[asyncio.Task[None]] = set()

    async def one(n: int, due: float) -> None:
        path, body = requests[n]
        connection = await idle.take()
        try:
            status, answer = await connection.post(path, body)
        except (OSError, asyncio.IncompleteReadError) as error:
            offered.count(type(error).__name__)
            return
        offered.latencies_ms.append((time.perf_counter() - due) * 1000)
        idle.put(connection)
        if not answered(n, status, answer):
            offered.count(str(status))

    began = time.perf_counter()
    for n in range(len(requests)):
        due = began + n / per_s
        wait = due - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        if len(tasks) >= MAX_OPEN_CONNECTIONS:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.create_task(one(n, due))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks)
    offered.elapsed = time.perf_counter() - began
    offered.opened = idle.opened
    await idle.close()
    return offered
