"""A local APNs for `tocsin bench … --channel apns`: HTTP/2 over TLS on `h2`, one process.

    python -m tocsin_bench.apns_peer --cert server.pem --key server.key --public-key apns.pub \\
        --key-id KEYID --team-id TEAMID --topic com.example.app --stats stats.json

It does what Apple's server does with each push, cheaply enough to keep up with the engine on
the same cores: TLS with ALPN `h2`, HTTP/2 with SETTINGS_MAX_CONCURRENT_STREAMS 1000 (as APNs
advertises); the provider token's ES256 signature, `kid` and `iss` verified once per token
per connection, and its age on every push; every header (method, path, push type, priority,
expiration, topic, a UUID `apns-id`, the collapse id's length) and the JSON payload checked.
It answers 200 with the `apns-id`, or Apple's status and reason. Each accepted push's
`apns-id` is counted (a second acceptance of one is a duplicate), with its lateness: arrival
minus the `tocsin.due` instant in its payload.

On SIGTERM it writes what it saw to `--stats` (JSON) and exits; it prints
`listening on https://127.0.0.1:PORT` once it accepts connections.

Why not hypercorn, as the tests' peer: its ASGI layers cost several times the CPU of the
sender it would measure.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import ssl
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import hpack
import jwt
import orjson
import uvloop
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from tocsin_bench.stats import spread

MAX_CONCURRENT_STREAMS = 1000
STREAMS_SETTING = h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS
MAX_TOKEN_AGE = 3600.0  # Apple refuses a provider token older than an hour
MAX_PAYLOAD = 4096
MAX_COLLAPSE_ID = 64
PRIORITIES = frozenset({b"1", b"5", b"10"})
PATH_PREFIX = b"/3/device/"


class Refused(Exception):
    """Apple's answer to a push that breaks its rules."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Expect:
    """What a valid push carries."""

    public_key: Any
    key_id: str
    team_id: str
    topics: frozenset[bytes]


@dataclass
class Tally:
    """What arrived, over every connection."""

    connections: int = 0
    token_verifications: int = 0
    accepted: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    seen: dict[bytes, int] = field(default_factory=dict)  # apns-id -> acceptances
    lateness: list[float] = field(default_factory=list)  # seconds, arrival - due

    def stats(self) -> dict[str, Any]:
        unique = len(self.seen)
        return {
            "connections": self.connections,
            "token_verifications": self.token_verifications,
            "accepted": self.accepted,
            "refused": self.refused,
            "unique": unique,
            "duplicates": self.accepted - unique,
            "due_to_accepted_s": spread(self.lateness),
        }


class Peer:
    """Checks pushes against `Expect` and counts them in one `Tally`."""

    def __init__(self, expect: Expect) -> None:
        self.expect = expect
        self.tally = Tally()

    def token_claims(self, token: bytes) -> dict[str, Any]:
        """The provider token's claims once its signature, `kid` and `iss` are checked."""
        self.tally.token_verifications += 1
        try:
            text = token.decode("ascii")
            header = jwt.get_unverified_header(text)
            claims: dict[str, Any] = jwt.decode(
                text,
                self.expect.public_key,
                algorithms=["ES256"],
                options={"require": ["iss", "iat"], "verify_iat": False},
            )
        except (jwt.InvalidTokenError, UnicodeDecodeError):
            raise Refused(403, "InvalidProviderToken") from None
        if header.get("kid") != self.expect.key_id or claims["iss"] != self.expect.team_id:
            raise Refused(403, "InvalidProviderToken")
        return claims

    def accept(self, headers: dict[bytes, bytes], body: bytes, arrived: float) -> None:
        """Check one push's headers and payload (the token was checked by the caller)."""
        if headers.get(b":method") != b"POST":
            raise Refused(405, "MethodNotAllowed")
        path = headers.get(b":path", b"")
        if not path.startswith(PATH_PREFIX) or len(path) == len(PATH_PREFIX):
            raise Refused(404, "BadPath")
        _check_headers(headers, self.expect.topics)
        due = _check_payload(body)
        apns_id = headers[b"apns-id"]
        tally = self.tally
        tally.accepted += 1
        tally.seen[apns_id] = tally.seen.get(apns_id, 0) + 1
        if due is not None:
            tally.lateness.append(arrived - due)

    def refused(self, reason: str) -> None:
        self.tally.refused[reason] = self.tally.refused.get(reason, 0) + 1


def _check_headers(headers: dict[bytes, bytes], topics: frozenset[bytes]) -> None:
    if headers.get(b"apns-push-type") != b"alert":
        raise Refused(400, "InvalidPushType")
    if headers.get(b"apns-priority") not in PRIORITIES:
        raise Refused(400, "BadPriority")
    if not headers.get(b"apns-expiration", b"").isdigit():
        raise Refused(400, "BadExpirationDate")
    topic = headers.get(b"apns-topic")
    if not topic:
        raise Refused(400, "MissingTopic")
    if topic not in topics:
        raise Refused(400, "TopicDisallowed")
    apns_id = headers.get(b"apns-id", b"")
    try:
        parsed = uuid.UUID(apns_id.decode("ascii"))
    except ValueError:
        raise Refused(400, "BadMessageId") from None
    if str(parsed).encode() != apns_id.lower():
        raise Refused(400, "BadMessageId")
    if len(headers.get(b"apns-collapse-id", b"")) > MAX_COLLAPSE_ID:
        raise Refused(400, "BadCollapseId")


def _check_payload(body: bytes) -> float | None:
    """The payload's `tocsin.due` as epoch seconds (None without one), once it is checked."""
    if not body:
        raise Refused(400, "PayloadEmpty")
    if len(body) > MAX_PAYLOAD:
        raise Refused(413, "PayloadTooLarge")
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise Refused(400, "BadPayload") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
        raise Refused(400, "BadPayload")
    due = (payload.get("tocsin") or {}).get("due")
    return datetime.fromisoformat(due).timestamp() if isinstance(due, str) else None


class _Encoder(hpack.Encoder):
    """HPACK without Huffman coding: its bit-by-bit Python loop is most of an answer's cost."""

    def encode(self, headers: Any, huffman: bool = False) -> bytes:
        return super().encode(headers, huffman=False)


class Connection(asyncio.Protocol):
    """One client connection: h2's server state machine fed by the transport."""

    def __init__(self, peer: Peer) -> None:
        config = h2.config.H2Configuration(
            client_side=False,
            header_encoding=None,  # bytes: nothing decoded that is not looked at
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
        )
        self._h2 = h2.connection.H2Connection(config=config)
        self._h2.encoder = _Encoder()
        self._peer = peer
        self._transport: asyncio.Transport | None = None
        self._requests: dict[int, tuple[dict[bytes, bytes], list[bytes]]] = {}
        self._tokens: dict[bytes, float] = {}  # verified on this connection -> its iat

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        self._peer.tally.connections += 1
        self._h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={STREAMS_SETTING: MAX_CONCURRENT_STREAMS},
        )
        self._h2.initiate_connection()
        self._flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self._h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self._flush()
            self._close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self._requests[event.stream_id] = (dict(event.headers), [])
            elif isinstance(event, h2.events.DataReceived):
                self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                request = self._requests.get(event.stream_id)
                if request is not None:
                    request[1].append(event.data)
            elif isinstance(event, h2.events.StreamEnded):
                request = self._requests.pop(event.stream_id, None)
                if request is not None:
                    self._answer(event.stream_id, *request)
            elif isinstance(event, h2.events.StreamReset):
                self._requests.pop(event.stream_id, None)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self._flush()
                self._close()
                return
        self._flush()

    def _answer(self, stream_id: int, headers: dict[bytes, bytes], body: list[bytes]) -> None:
        apns_id = headers.get(b"apns-id") or str(uuid.uuid4()).encode()
        try:
            self._check_token(headers)
            self._peer.accept(headers, b"".join(body), time.time())
        except Refused as refusal:
            self._peer.refused(refusal.reason)
            document = orjson.dumps({"reason": refusal.reason})
            self._h2.send_headers(
                stream_id,
                [
                    (b":status", str(refusal.status).encode()),
                    (b"apns-id", apns_id),
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(document)).encode()),
                ],
            )
            self._h2.send_data(stream_id, document, end_stream=True)
            return
        self._h2.send_headers(stream_id, [(b":status", b"200"), (b"apns-id", apns_id)], True)

    def _check_token(self, headers: dict[bytes, bytes]) -> None:
        scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() != b"bearer" or not token:
            raise Refused(403, "MissingProviderToken")
        issued = self._tokens.get(token)
        if issued is None:
            issued = self._tokens[token] = float(self._peer.token_claims(token)["iat"])
        if time.time() - issued > MAX_TOKEN_AGE:
            raise Refused(403, "ExpiredProviderToken")

    def _flush(self) -> None:
        data = self._h2.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def _close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._requests.clear()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tocsin_bench.apns_peer", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--cert", type=Path, required=True, help="server certificate (PEM)")
    parser.add_argument("--key", type=Path, required=True, help="its private key (PEM)")
    parser.add_argument("--public-key", type=Path, required=True, help="the .p8's public half")
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--topic", action="append", required=True, help="an allowed apns-topic")
    parser.add_argument("--stats", type=Path, required=True, help="JSON written on SIGTERM")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    expect = Expect(
        public_key=load_pem_public_key(args.public_key.read_bytes()),
        key_id=args.key_id,
        team_id=args.team_id,
        topics=frozenset(topic.encode() for topic in args.topic),
    )
    peer = Peer(expect)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.cert, args.key)
    tls.set_alpn_protocols(["h2"])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(peer), sock=sock, ssl=tls, backlog=1024)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"listening on https://{args.host}:{sock.getsockname()[1]}", flush=True)
    await stop.wait()
    server.close()
    args.stats.write_bytes(orjson.dumps(peer.tally.stats()))


def main(argv: Sequence[str] | None = None) -> int:
    uvloop.run(serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
