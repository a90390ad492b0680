"""A Web Push service on loopback for the tests: it checks each push the way a real push
service and browser would, with code of its own (the `cryptography` primitives, not the
libraries the sender uses), so a push it accepts is one a browser could read.

Per push it verifies the VAPID `Authorization` (RFC 8292: ES256 signature by the `k` key,
`aud` = its own origin, `exp` in the next 24 h, a `sub`; `k` must be the key the
subscription was made with), the RFC 8030 headers, and decrypts the `aes128gcm` body with
the subscription's private key and auth secret (RFC 8291), then records what it got and
answers what the test told it to for that subscription (201 by default).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tests.support.peers.loopback import serving

MAX_JWT_LIFETIME = 24 * 3600
_TOPIC = re.compile(r"[A-Za-z0-9_-]{1,32}")


class Refused(Exception):
    """A push the receiver would not accept; the message says why, `status` is the answer
    (403 for a VAPID key the subscription was not made with, as FCM answers; else 400)."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _point(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )


def _hkdf(secret: bytes, *, salt: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(secret)


def decrypt(body: bytes, *, key: ec.EllipticCurvePrivateKey, auth: bytes) -> bytes:
    """The browser's side of RFC 8291: one `aes128gcm` record (RFC 8188) to plaintext."""
    if len(body) < 21:
        raise Refused("body shorter than the aes128gcm header")
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    sender = body[21 : 21 + idlen]
    record = body[21 + idlen :]
    if idlen != 65 or len(record) > rs or len(record) < 17:
        raise Refused(f"bad aes128gcm header (idlen {idlen}, rs {rs}, record {len(record)})")
    try:
        sender_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender)
    except ValueError:
        raise Refused("the key id is not a P-256 point") from None
    shared = key.exchange(ec.ECDH(), sender_key)
    info = b"WebPush: info\x00" + _point(key.public_key()) + sender
    ikm = _hkdf(shared, salt=auth, info=info, length=32)
    cek = _hkdf(ikm, salt=salt, info=b"Content-Encoding: aes128gcm\x00", length=16)
    nonce = _hkdf(ikm, salt=salt, info=b"Content-Encoding: nonce\x00", length=12)
    try:
        padded = AESGCM(cek).decrypt(nonce, record, None)
    except InvalidTag:
        raise Refused("the payload does not decrypt (wrong keys or auth secret)") from None
    unpadded = padded.rstrip(b"\x00")
    if not unpadded.endswith(b"\x02"):
        raise Refused("the last record's delimiter is not 0x02")
    return unpadded[:-1]


def verify_vapid(header: str, *, audience: str, now: float) -> tuple[str, dict[str, Any]]:
    """`vapid t=<JWT>, k=<key>` checked as RFC 8292 says: the key `k` and the JWT's claims."""
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "vapid":
        raise Refused(f"Authorization scheme {scheme!r} is not vapid")
    values = dict(p.strip().split("=", 1) for p in params.split(",") if "=" in p)
    if "t" not in values or "k" not in values:
        raise Refused("Authorization lacks t= or k=")
    head, claims_part, signature = values["t"].split(".")
    if json.loads(unb64(head)) != {"typ": "JWT", "alg": "ES256"}:
        raise Refused("the JWT header is not ES256")
    raw = unb64(signature)
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(values["k"]))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public.verify(der, f"{head}.{claims_part}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Refused("the JWT signature does not verify with k") from None
    claims: dict[str, Any] = json.loads(unb64(claims_part))
    if claims.get("aud") != audience:
        raise Refused(f"aud {claims.get('aud')!r} is not {audience!r}")
    if not now < claims.get("exp", 0) <= now + MAX_JWT_LIFETIME:
        raise Refused("exp is not within the next 24 hours")
    if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
        raise Refused("sub is not a mailto: or https: URL")
    return values["k"], claims


@dataclass
class Browser:
    """One subscription: the browser's key pair and auth secret, and its endpoint."""

    id: str
    endpoint: str
    key: ec.EllipticCurvePrivateKey
    auth: bytes
    server_key: str  # the application server key it subscribed with

    def subscription(self) -> dict[str, Any]:
        """What `PushSubscription.toJSON()` gives the page."""
        return {
            "endpoint": self.endpoint,
            "expirationTime": None,
            "keys": {"p256dh": b64(_point(self.key.public_key())), "auth": b64(self.auth)},
        }

    def address(self) -> dict[str, str]:
        """The subscription as a contact stores it."""
        keys = self.subscription()["keys"]
        return {"endpoint": self.endpoint, "p256dh": keys["p256dh"], "auth": keys["auth"]}


@dataclass(frozen=True)
class Push:
    """One push the receiver accepted (whatever it then answered)."""

    subscription: str
    headers: Mapping[str, str]
    claims: Mapping[str, Any]
    payload: Mapping[str, Any]
    client: tuple[str, int]  # the sender's socket: the same one for a reused connection
    at: float


@dataclass
class _Answer:
    status: int = 201
    retry_after: str | None = None
    delay: float = 0.0
    body: str = ""


@dataclass
class WebPushReceiver:
    """The push service. `subscribe` makes a browser; `answer` says how to answer it."""

    origin: str = ""
    pushes: list[Push] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    _browsers: dict[str, Browser] = field(default_factory=dict)
    _answers: dict[str, _Answer] = field(default_factory=dict)

    def subscribe(self, server_key: str) -> Browser:
        id_ = secrets.token_urlsafe(8)
        browser = Browser(
            id=id_,
            endpoint=f"{self.origin}/push/{id_}",
            key=ec.generate_private_key(ec.SECP256R1()),
            auth=secrets.token_bytes(16),
            server_key=server_key,
        )
        self._browsers[id_] = browser
        return browser

    def answer(
        self,
        browser: Browser,
        status: int,
        *,
        retry_after: str | None = None,
        delay: float = 0.0,
        body: str = "",
    ) -> None:
        self._answers[browser.id] = _Answer(status, retry_after, delay, body)

    async def _push(self, request: web.Request) -> web.Response:
        browser = self._browsers.get(request.match_info["id"])
        if browser is None:
            return web.Response(status=404, text="no such subscription")
        try:
            push = await self._accept(request, browser)
        except Refused as refusal:
            self.refused.append(str(refusal))
            return web.Response(status=refusal.status, text=str(refusal))
        self.pushes.append(push)
        answer = self._answers.get(browser.id, _Answer())
        await asyncio.sleep(answer.delay)
        headers = {"location": f"{self.origin}/message/{len(self.pushes)}"}
        if answer.retry_after is not None:
            headers["retry-after"] = answer.retry_after
        return web.Response(status=answer.status, headers=headers, text=answer.body)

    async def _accept(self, request: web.Request, browser: Browser) -> Push:
        key, claims = verify_vapid(
            request.headers.get("authorization", ""), audience=self.origin, now=time.time()
        )
        if key != browser.server_key:
            raise Refused("k is not the key the subscription was made with", 403)
        if request.headers.get("content-encoding") != "aes128gcm":
            raise Refused("Content-Encoding is not aes128gcm")
        if not request.headers.get("ttl", "").isdigit():
            raise Refused("TTL missing or not whole seconds")
        if not _TOPIC.fullmatch(request.headers.get("topic", "")):
            raise Refused("Topic is not 1-32 base64url characters")
        plaintext = decrypt(await request.read(), key=browser.key, auth=browser.auth)
        host, port = request.transport.get_extra_info("peername")[:2]  # type: ignore[union-attr]
        return Push(
            subscription=browser.id,
            headers={k.lower(): v for k, v in request.headers.items()},
            claims=claims,
            payload=json.loads(plaintext),
            client=(host, port),
            at=time.monotonic(),
        )


@asynccontextmanager
async def webpush_receiver(*, tls: ssl.SSLContext | None = None) -> AsyncIterator[WebPushReceiver]:
    """A receiver on loopback until the block ends (over TLS with `tls`)."""
    receiver = WebPushReceiver()
    app = web.Application()
    app.router.add_post("/push/{id}", receiver._push)
    async with serving(app, tls=tls) as base:
        receiver.origin = base
        yield receiver
