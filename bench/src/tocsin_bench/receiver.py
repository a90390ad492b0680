"""A local webhook receiver: counts delivery identities, checks signatures, fails on request.

Run it as its own process — the real peer of the engine's tests and of the benchmark:

    python -m tocsin_bench.receiver --port 9000 --secret whsec_… --fail-first 2

Every POST is one delivery attempt: its `webhook-id` and arrival time are recorded, and it
is answered 204 — or `--status` (503 unless told) while failing: for the first `--fail-first`
attempts of each id, and for everything before the epoch second `--fail-until` (and from
`--fail-from`, when given: a window of failure that starts after the receiver did), with the
body `--body` (bytes, backslash escapes read: `--body 'bad\\x00body'`), empty unless told. With
`--secret`, a request whose Standard Webhooks signature does not verify is answered 401 and
counted `invalid`. With `--delay`, every delivery is counted when it arrives and answered that
many seconds later: a slow peer, whose 2xx may come back after the sender gave up.

`GET /stats` reports the counts (`?ids=1` adds each id's arrivals, as `[epoch seconds,
status]` pairs, and `?bodies=1` each id's last body when `--keep-bodies`); `POST /reset`
forgets everything; `POST /fail?from=EPOCH&until=EPOCH` sets the window of failure of a
receiver already running.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import orjson
import uvicorn
import uvloop

from tocsin.channels.signing import secret_key, verify

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

TOLERANCE_SECONDS = 300  # Standard Webhooks: refuse timestamps further off than this


@dataclass(kw_only=True)
class Behaviour:
    """How the receiver answers."""

    key: bytes | None = None
    fail_first: int = 0
    fail_from: float = 0.0
    fail_until: float = 0.0
    status: int = 503
    retry_after: str | None = None
    keep_bodies: bool = False
    delay: float = 0.0  # seconds between a delivery's arrival and its answer
    body: bytes = b""  # of the failing answers


@dataclass
class Tally:
    """What arrived."""

    total: int = 0
    accepted: int = 0
    failed: int = 0
    invalid: int = 0
    timestamp_skew: float = 0.0  # the largest |arrival - webhook-timestamp| seen, seconds
    arrivals: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    accepted_ids: dict[str, int] = field(default_factory=dict)
    bodies: dict[str, Any] = field(default_factory=dict)

    def stats(self, *, ids: bool, bodies: bool) -> dict[str, Any]:
        unique = len(self.accepted_ids)
        report: dict[str, Any] = {
            "total": self.total,
            "accepted": self.accepted,
            "failed": self.failed,
            "invalid": self.invalid,
            "unique": unique,
            "duplicates": self.accepted - unique,
            "timestamp_skew": self.timestamp_skew,
        }
        if ids:
            report["arrivals"] = self.arrivals
        if bodies:
            report["bodies"] = self.bodies
        return report


class Receiver:
    """The ASGI app."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.tally = Tally()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        if method == "POST" and path == "/reset":
            self.tally = Tally()
            await _answer(send, 204)
        elif method == "POST" and path == "/fail":
            query = parse_qs(scope.get("query_string", b"").decode())
            self.behaviour.fail_from = float(query.get("from", ["0"])[0])
            self.behaviour.fail_until = float(query.get("until", ["0"])[0])
            await _answer(send, 204)
        elif method == "GET" and path == "/stats":
            query = parse_qs(scope.get("query_string", b"").decode(), keep_blank_values=True)
            stats = self.tally.stats(ids="ids" in query, bodies="bodies" in query)
            await _answer(send, 200, orjson.dumps(stats), b"application/json")
        elif method == "GET" and path == "/healthz":
            await _answer(send, 200, b"ok")
        elif method == "POST":
            status = self._take(_headers(scope), await _read_body(receive))
            if self.behaviour.delay > 0:
                await asyncio.sleep(self.behaviour.delay)
            extra = []
            if status >= 500 and self.behaviour.retry_after is not None:
                extra.append((b"retry-after", self.behaviour.retry_after.encode()))
            body = self.behaviour.body if status == self.behaviour.status else b""
            await _answer(send, status, body, headers=extra)
        else:
            await _answer(send, 404)

    def _take(self, headers: dict[str, str], body: bytes) -> int:
        arrived = time.time()
        tally, behaviour = self.tally, self.behaviour
        tally.total += 1
        message_id = headers.get("webhook-id", "")
        stamped = headers.get("webhook-timestamp", "")
        if stamped.isdigit():
            tally.timestamp_skew = max(tally.timestamp_skew, abs(arrived - int(stamped)))
        if not message_id or not self._verified(message_id, headers, body, arrived):
            tally.invalid += 1
            return 401
        seen = tally.arrivals.setdefault(message_id, [])
        status = 204
        failing = behaviour.fail_from <= arrived < behaviour.fail_until
        if len(seen) < behaviour.fail_first or failing:
            status = behaviour.status
        seen.append((arrived, status))
        if status >= 300:
            tally.failed += 1
            return status
        tally.accepted += 1
        tally.accepted_ids[message_id] = tally.accepted_ids.get(message_id, 0) + 1
        if behaviour.keep_bodies:
            tally.bodies[message_id] = orjson.loads(body)
        return status

    def _verified(self, message_id: str, headers: dict[str, str], body: bytes, now: float) -> bool:
        key = self.behaviour.key
        if key is None:
            return True
        try:
            timestamp = int(headers.get("webhook-timestamp", ""))
        except ValueError:
            return False
        if abs(now - timestamp) > TOLERANCE_SECONDS:
            return False
        return verify(key, message_id, timestamp, body, headers.get("webhook-signature", ""))


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode().lower(): value.decode() for name, value in scope["headers"]}


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(
    send: Send,
    status: int,
    body: bytes = b"",
    content_type: bytes = b"text/plain",
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tocsin_bench.receiver", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--secret", help="whsec_… : verify signatures")
    parser.add_argument("--fail-first", type=int, default=0, metavar="N")
    parser.add_argument("--fail-from", type=float, default=0.0, metavar="EPOCH")
    parser.add_argument("--fail-until", type=float, default=0.0, metavar="EPOCH")
    parser.add_argument("--status", type=int, default=503, help="the failing answer")
    parser.add_argument("--retry-after", help="Retry-After header sent with 5xx answers")
    parser.add_argument("--keep-bodies", action="store_true", help="keep each id's last body")
    parser.add_argument("--delay", type=float, default=0.0, metavar="SECONDS", help="answer late")
    parser.add_argument(
        "--body",
        type=escaped_bytes,
        default=b"",
        metavar="BYTES",
        help=r"the failing answers' body, backslash escapes read (bad\x00body)",
    )
    return parser.parse_args(argv)


def escaped_bytes(value: str) -> bytes:
    """The bytes `value` spells, its backslash escapes (`\\x00`, `\\n`, `\\xff`) read: a
    command line cannot carry a NUL itself. Other characters stand for their UTF-8 bytes."""
    return value.encode("utf-8").decode("unicode_escape").encode("latin-1")


async def serve(args: argparse.Namespace) -> None:
    behaviour = Behaviour(
        key=secret_key(args.secret) if args.secret else None,
        fail_first=args.fail_first,
        fail_from=args.fail_from,
        fail_until=args.fail_until,
        status=args.status,
        retry_after=args.retry_after,
        keep_bodies=args.keep_bodies,
        delay=args.delay,
        body=args.body,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(4096)  # before saying so: connections wait in the backlog, never refused
    config = uvicorn.Config(
        Receiver(behaviour),
        log_level="warning",
        access_log=False,
        http="httptools",
        loop="none",
        lifespan="off",
        backlog=4096,
    )
    server = uvicorn.Server(config)
    port = sock.getsockname()[1]
    print(f"listening on http://{args.host}:{port}", flush=True)  # the CLI's one output
    await server.serve(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    uvloop.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
