"""A local FCM for the tests: Google's OAuth2 token endpoint and FCM's HTTP v1 send endpoint.

The token endpoint verifies the JWT-bearer assertion's RS256 signature with the test service
account's public key and its claims (issuer, scope, audience, lifetime), and hands out access
tokens that expire. The send endpoint checks the bearer token and the message's fields as FCM
does (strings only in `data`, a TTL in seconds, known fields only), records what it accepted,
and answers with FCM's v1 error JSON when a test tells it to.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import ssl
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
import orjson
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
MAX_ASSERTION_LIFETIME = 3600
MESSAGE_FIELDS = frozenset({"token", "notification", "data", "android", "apns", "webpush"})
TTL = re.compile(r"\d+(\.\d{1,9})?s")
PRIORITIES = frozenset({"high", "normal", "HIGH", "NORMAL"})


class Invalid(Exception):
    """A request FCM would refuse with 400 INVALID_ARGUMENT."""


@dataclass(frozen=True, kw_only=True)
class Message:
    """One message the send endpoint accepted."""

    message: dict[str, Any]
    access_token: str
    connection: tuple[str, int]


@dataclass(frozen=True, kw_only=True)
class Reply:
    status: int
    body: dict[str, Any]
    retry_after: str | None = None


def error_body(
    status: int,
    state: str,
    *,
    code: str | None = None,
    message: str = "",
    field_violation: str | None = None,
) -> dict[str, Any]:
    """FCM's v1 error document: `status` (google.rpc.Code name), an FcmError `errorCode`,
    and a BadRequest naming the field at fault."""
    details: list[dict[str, Any]] = []
    if code is not None:
        details.append(
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}
        )
    if field_violation is not None:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field_violation, "description": message}],
            }
        )
    return {"error": {"code": status, "message": message, "status": state, "details": details}}


@dataclass
class FcmPeer:
    """The servers' state: the service account they trust, what they got, what to answer."""

    public_key: rsa.RSAPublicKey
    client_email: str
    project_id: str
    now: Callable[[], float] = time.time
    expires_in: int = 3600
    token_uri: str = ""  # set once serving: the audience the assertion must name
    assertions: list[dict[str, Any]] = field(default_factory=list)  # verified claims
    messages: list[Message] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    token_replies: deque[Reply] = field(default_factory=deque)
    _replies: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    _delays: dict[str, float] = field(default_factory=dict)
    _access_tokens: dict[str, float] = field(default_factory=dict)  # token -> expiry

    def answer(self, device: str, reply: Reply, *, times: int = 1) -> None:
        """Answer the next `times` messages to `device` with `reply`."""
        self._replies[device].extend([reply] * times)

    def delay(self, device: str, seconds: float) -> None:
        self._delays[device] = seconds

    def revoke_access_tokens(self) -> None:
        """Every access token handed out so far is refused from now on (401)."""
        self._access_tokens.clear()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/token", self._grant)
        app.router.add_post("/v1/projects/{project}/messages:send", self._send)
        return app

    async def _grant(self, request: web.Request) -> web.Response:
        if self.token_replies:
            return _reply(self.token_replies.popleft())
        form = await request.post()
        if form.get("grant_type") != GRANT_TYPE:
            return _oauth_error("unsupported_grant_type", "grant_type")
        try:
            claims = self._verify_assertion(str(form.get("assertion", "")))
        except Invalid as refusal:
            self.refusals.append(str(refusal))
            return _oauth_error("invalid_grant", str(refusal))
        self.assertions.append(claims)
        token = f"ya29.{secrets.token_urlsafe(24)}"
        self._access_tokens[token] = self.now() + self.expires_in
        document = {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}
        return web.json_response(document, dumps=lambda value: orjson.dumps(value).decode())

    def _verify_assertion(self, assertion: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                assertion,
                self.public_key,
                algorithms=["RS256"],
                audience=self.token_uri,
                issuer=self.client_email,
                options={
                    "require": ["iss", "aud", "iat", "exp", "scope"],
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidTokenError as error:
            raise Invalid(f"Invalid JWT: {error}") from None
        if claims["scope"] != SCOPE:
            raise Invalid("Invalid JWT: wrong scope")
        lifetime = claims["exp"] - claims["iat"]
        if not 0 < lifetime <= MAX_ASSERTION_LIFETIME or claims["exp"] < self.now():
            raise Invalid("Invalid JWT: Token must be a short-lived token")
        return claims

    async def _send(self, request: web.Request) -> web.Response:
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self._access_tokens.get(bearer, 0.0) <= self.now():
            self.refusals.append("UNAUTHENTICATED")
            body = error_body(401, "UNAUTHENTICATED", message="Request had invalid credentials.")
            return _reply(Reply(status=401, body=body))
        if request.match_info["project"] != self.project_id:
            body = error_body(403, "PERMISSION_DENIED", message="Permission denied.")
            return _reply(Reply(status=403, body=body))
        try:
            message = _check_message(await request.read())
        except Invalid as refusal:
            self.refusals.append(str(refusal))
            body = error_body(
                400, "INVALID_ARGUMENT", code="INVALID_ARGUMENT", message=str(refusal)
            )
            return _reply(Reply(status=400, body=body))
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.messages.append(
            Message(message=message, access_token=bearer, connection=tuple(peer or ("", 0)))
        )
        device = str(message["token"])
        await asyncio.sleep(self._delays.get(device, 0.0))
        if self._replies[device]:
            return _reply(self._replies[device].popleft())
        name = f"projects/{self.project_id}/messages/0:{secrets.randbelow(10**16)}"
        return _reply(Reply(status=200, body={"name": name}))


def _check_message(raw: bytes) -> dict[str, Any]:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise Invalid("Invalid JSON payload received.") from None
    message = document.get("message") if isinstance(document, dict) else None
    if not isinstance(message, dict) or set(document) != {"message"}:
        raise Invalid("Invalid JSON payload received: no message")
    unknown = set(message) - MESSAGE_FIELDS
    if unknown:
        raise Invalid(f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r}")
    if not isinstance(message.get("token"), str) or not message["token"]:
        raise Invalid("The registration token is not a valid FCM registration token")
    _check_strings(message.get("notification", {}), "message.notification")
    _check_strings(message.get("data", {}), "message.data")
    _check_android(message.get("android", {}))
    _check_strings(message.get("apns", {}).get("headers", {}), "message.apns.headers")
    return message


def _check_strings(values: Any, where: str) -> None:
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise Invalid(f"Invalid value at '{where}': every value must be a string")


def _check_android(android: Any) -> None:
    if not isinstance(android, dict):
        raise Invalid("Invalid value at 'message.android'")
    if "ttl" in android and not (isinstance(android["ttl"], str) and TTL.fullmatch(android["ttl"])):
        raise Invalid("Invalid value at 'message.android.ttl' (a duration like '3.5s')")
    if "priority" in android and android["priority"] not in PRIORITIES:
        raise Invalid("Invalid value at 'message.android.priority'")
    if not isinstance(android.get("collapse_key", ""), str):
        raise Invalid("Invalid value at 'message.android.collapse_key'")


def _reply(reply: Reply) -> web.Response:
    headers = {"retry-after": reply.retry_after} if reply.retry_after is not None else None
    return web.Response(
        body=orjson.dumps(reply.body),
        status=reply.status,
        headers=headers,
        content_type="application/json",
    )


def _oauth_error(error: str, description: str) -> web.Response:
    return _reply(Reply(status=400, body={"error": error, "error_description": description}))


@asynccontextmanager
async def serving(peer: FcmPeer, *, tls: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """Serve `peer` on a loopback port in this event loop, over plain HTTP or over TLS with
    `tls`; yields its base URL (the token endpoint is `{base}/token`, set as `peer.token_uri`)."""
    runner = web.AppRunner(peer.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    host, port = runner.addresses[0][:2]
    base = f"{'https' if tls else 'http'}://{host}:{port}"
    peer.token_uri = f"{base}/token"
    try:
        yield base
    finally:
        await runner.cleanup()
