"""A local APNs for the tests: an HTTP/2 server over TLS that checks each push as Apple does.

It verifies the provider token's ES256 signature with the test's public key, its `kid`, `iss`
and age (and that it is not renewed more often than every 20 minutes), checks every header
and the payload against Apple's rules, records what it accepted, and answers with Apple's
status codes and reasons: 200 with the `apns-id`, or what a test scripted for a device token.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric import ec
from hypercorn.asyncio import serve
from hypercorn.config import Config
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

MAX_TOKEN_AGE = 3600.0  # Apple refuses a provider token older than an hour
MIN_TOKEN_RENEWAL = 20 * 60.0  # and one renewed more often than this
MAX_PAYLOAD = 4096
PRIORITIES = frozenset({"1", "5", "10"})


class Refused(Exception):
    """Apple's answer to a request that breaks its rules."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class Push:
    """One push the peer accepted (signature and headers verified)."""

    token: str
    headers: dict[str, str]
    payload: dict[str, Any]
    claims: dict[str, Any]  # the provider token's verified claims
    kid: str
    connection: tuple[str, int]  # the client's address: one per HTTP/2 connection
    http_version: str


@dataclass(frozen=True, kw_only=True)
class Reply:
    status: int
    reason: str | None = None
    retry_after: str | None = None


@dataclass
class ApnsPeer:
    """The server's state: what it expects, what it got, and what it was told to answer."""

    public_key: ec.EllipticCurvePublicKey
    key_id: str
    team_id: str
    topics: frozenset[str]
    now: Callable[[], float] = time.time
    pushes: list[Push] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # why each refused request was refused
    # Provider tokens issued before this instant are answered ExpiredProviderToken.
    expire_tokens_before: float | None = None
    _replies: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    _delays: dict[str, float] = field(default_factory=dict)
    _tokens_seen: dict[str, float] = field(default_factory=dict)  # JWT -> its iat
    _verified: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)

    def answer(
        self,
        device: str,
        status: int,
        reason: str | None = None,
        *,
        retry_after: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` pushes to `device` with `status` and `reason`."""
        for _ in range(times):
            self._replies[device].append(
                Reply(status=status, reason=reason, retry_after=retry_after)
            )

    def delay(self, device: str, seconds: float) -> None:
        """Take `seconds` to answer each push to `device`."""
        self._delays[device] = seconds

    def app(self) -> Starlette:
        """The ASGI app: APNs' one route."""
        return Starlette(routes=[Route("/3/device/{device}", self._push, methods=["POST"])])

    async def _push(self, request: Request) -> Response:
        device = request.path_params["device"]
        request_id = request.headers.get("apns-id") or str(uuid.uuid4())
        try:
            self._accept(device, request, await request.body())
        except Refused as refusal:
            self.refusals.append(refusal.reason)
            return _reply(refusal.status, request_id, refusal.reason)
        await asyncio.sleep(self._delays.get(device, 0.0))
        scripted = self._replies[device]
        if scripted:
            reply = scripted.popleft()
            return _reply(reply.status, request_id, reply.reason, reply.retry_after)
        return _reply(200, request_id)

    def _accept(self, device: str, request: Request, body: bytes) -> None:
        headers = dict(request.headers)
        claims, kid = self._verify_token(headers)
        _check_headers(headers, self.topics)
        payload = _check_payload(body)
        assert request.client is not None
        self.pushes.append(
            Push(
                token=device,
                headers=headers,
                payload=payload,
                claims=claims,
                kid=kid,
                connection=(request.client.host, request.client.port),
                http_version=str(request.scope["http_version"]),
            )
        )

    def _verify_token(self, headers: dict[str, str]) -> tuple[dict[str, Any], str]:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Refused(403, "MissingProviderToken")
        verified = self._verified.get(token)
        if verified is None:
            verified = self._verified[token] = self._verify_signature(token)
        claims, kid = verified
        issued = float(claims["iat"])
        too_old = self.expire_tokens_before is not None and issued < self.expire_tokens_before
        if too_old or self.now() - issued > MAX_TOKEN_AGE:
            raise Refused(403, "ExpiredProviderToken")
        self._note_renewal(token, issued)
        return claims, kid

    def _verify_signature(self, token: str) -> tuple[dict[str, Any], str]:
        """The token's claims and key id once its signature, `kid` and `iss` are checked.
        (Once per token, as APNs does: a provider sends the same one for up to an hour.)"""
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(
                token,
                self.public_key,
                algorithms=["ES256"],
                options={"require": ["iss", "iat"], "verify_iat": False},
            )
        except jwt.InvalidTokenError:
            raise Refused(403, "InvalidProviderToken") from None
        if header.get("kid") != self.key_id or claims["iss"] != self.team_id:
            raise Refused(403, "InvalidProviderToken")
        return claims, str(header["kid"])

    def _note_renewal(self, token: str, issued: float) -> None:
        if token in self._tokens_seen:
            return
        if self._tokens_seen and issued - max(self._tokens_seen.values()) < MIN_TOKEN_RENEWAL:
            raise Refused(429, "TooManyProviderTokenUpdates")
        self._tokens_seen[token] = issued

    @property
    def provider_tokens(self) -> list[str]:
        """Every distinct provider token accepted, oldest first."""
        return list(self._tokens_seen)


def _check_headers(headers: dict[str, str], topics: frozenset[str]) -> None:
    if headers.get("apns-push-type") != "alert":
        raise Refused(400, "InvalidPushType")
    if headers.get("apns-priority") not in PRIORITIES:
        raise Refused(400, "BadPriority")
    if not headers.get("apns-expiration", "").isdigit():
        raise Refused(400, "BadExpirationDate")
    topic = headers.get("apns-topic")
    if not topic:
        raise Refused(400, "MissingTopic")
    if topic not in topics:
        raise Refused(400, "TopicDisallowed")
    try:
        parsed = uuid.UUID(headers.get("apns-id", ""))
    except ValueError:
        raise Refused(400, "BadMessageId") from None
    if str(parsed) != headers["apns-id"].lower():
        raise Refused(400, "BadMessageId")
    if len(headers.get("apns-collapse-id", "").encode()) > 64:
        raise Refused(400, "BadCollapseId")


def _check_payload(body: bytes) -> dict[str, Any]:
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
    return payload


def _reply(
    status: int, request_id: str, reason: str | None = None, retry_after: str | None = None
) -> Response:
    headers = {"apns-id": request_id}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if reason is None:
        return Response(status_code=status, headers=headers)
    document: dict[str, Any] = {"reason": reason}
    if status == 410:
        document["timestamp"] = int(time.time() * 1000)
    return Response(orjson.dumps(document), status, headers, media_type="application/json")


@asynccontextmanager
async def serving(
    peer: ApnsPeer, *, certfile: str, keyfile: str, port: int = 0
) -> AsyncIterator[str]:
    """Serve `peer` over TLS (HTTP/2 by ALPN) on a loopback port (any free one unless `port`
    is given) in this event loop; yields its base URL. Leaving closes every connection."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1024)
    port = listener.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{os.dup(listener.fileno())}"]  # hypercorn closes its own copy
    config.certfile, config.keyfile = certfile, keyfile
    config.alpn_protocols = ["h2"]
    config.h2_max_concurrent_streams = 1000  # as APNs advertises
    config.keep_alive_timeout = 60
    config.keep_alive_max_requests = 1 << 30  # APNs keeps a connection while it is used
    config.graceful_timeout = 0.5
    config.accesslog = None
    listener.close()
    stop = asyncio.Event()
    server = asyncio.create_task(serve(peer.app(), config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        stop.set()
        await server
