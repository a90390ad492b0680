"""The `webpush` channel: encrypted pushes to browsers through their push services.

RFC 8030 is the protocol (one POST per message to the subscription's endpoint, with `TTL`,
`Urgency` and `Topic`), RFC 8291 encrypts the payload (`aes128gcm`, with a fresh ECDH key
pair and salt per message, for the browser's `p256dh` key and `auth` secret) and RFC 8292
identifies this server to the push service (VAPID: an ES256 JWT and the public key whose
private half signed it; the browser subscribed with that public key, so only this server can
push to its subscriptions). A contact is a browser's `PushSubscription` JSON.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import os
import re
import ssl
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import http_ece
import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid.jwt import sign as sign_jwt
from pydantic import Field, SecretStr, field_validator

from tocsin.actions import ActionLinks
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.channels.sessions import http_session, trusting
from tocsin.channels.webhook import parse_retry_after
from tocsin.clock import Clock
from tocsin.domain import Channel, Firing
from tocsin.errors import InvalidInput
from tocsin.outbound import GuardedResolver, refused_by_policy, refused_url
from tocsin.outside import MAX_ID, outside_text
from tocsin.settings_core import CaFile, CoreSettings, ReadableFile

KIND = Channel.WEBPUSH
ENABLED_BY = "TOCSIN_VAPID_PRIVATE_KEY (or TOCSIN_VAPID_PRIVATE_KEY_FILE) and TOCSIN_VAPID_SUBJECT"

# One record of 4,096 octets is what every push service must accept (RFC 8291 section 4):
# the body is an 86-octet header (salt, record size, key id = the sender's 65-octet key),
# then the plaintext, a 1-octet delimiter and the 16-octet tag.
RECORD_SIZE = 4096
MAX_PLAINTEXT = RECORD_SIZE - 86 - 1 - 16
# RFC 8292 allows a JWT to live 24 h at most; half of that leaves room for a push service
# whose clock is ahead, and renewing an hour before expiry keeps a cached token from dying
# in flight.
JWT_LIFETIME_SECONDS = 12 * 3600
JWT_RENEW_SECONDS = 3600
MAX_CACHED_ORIGINS = 1024
TOPIC_LENGTH = 32  # RFC 8030 section 5.4: at most 32 characters of base64url
MAX_ENDPOINT_LENGTH = 2048
MAX_ERROR_BODY = 200
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_CONTACT_FIELDS = frozenset({"subscription"})


def validate_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """`{"subscription": {"endpoint": …, "keys": {"p256dh": …, "auth": …}}}` (a browser's
    `PushSubscription.toJSON()`) as `{endpoint, p256dh, auth}`, the keys as unpadded base64url.

    The endpoint must be https (http only for a loopback host, so a test or a push service
    on the same machine can be used); `p256dh` must decode to an uncompressed point on P-256
    and `auth` to 16 octets: a subscription that cannot be encrypted for is refused here,
    not at ring time.
    """
    unknown = sorted(set(fields) - _CONTACT_FIELDS)
    if unknown:
        raise InvalidInput(unknown[0], "unknown field (a webpush contact has `subscription`)")
    subscription = _mapping(fields.get("subscription"), "subscription")
    keys = _mapping(subscription.get("keys"), "subscription.keys")
    return {
        "endpoint": _endpoint(subscription.get("endpoint")),
        "p256dh": b64encode(_p256dh(keys.get("p256dh"))),
        "auth": b64encode(_auth(keys.get("auth"))),
    }


def _mapping(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInput(
            field,
            "required: an object (the browser's PushSubscription as JSON: "
            '{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}})',
        )
    return value


def _endpoint(value: object) -> str:
    field = "subscription.endpoint"
    if not isinstance(value, str) or not value:
        raise InvalidInput(field, "required: the push service URL the browser gave")
    if len(value) > MAX_ENDPOINT_LENGTH or not value.isprintable() or " " in value:
        raise InvalidInput(field, f"not a URL of at most {MAX_ENDPOINT_LENGTH} characters")
    try:
        parts = urlsplit(value)
        _ = parts.port  # raises ValueError for a port out of range
    except ValueError:
        raise InvalidInput(field, "not a URL") from None
    if not parts.hostname:
        raise InvalidInput(field, "must be an absolute https URL")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(field, "must not carry credentials")
    loopback = parts.scheme == "http" and _is_loopback(parts.hostname)
    if parts.scheme != "https" and not loopback:
        raise InvalidInput(field, "must be an https URL (http only for a loopback host)")
    return value


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _p256dh(value: object) -> bytes:
    field = "subscription.keys.p256dh"
    raw = _decoded(value, field)
    if len(raw) != 65 or raw[0] != 4:
        raise InvalidInput(
            field, f"must be an uncompressed P-256 point (65 bytes from 0x04), not {len(raw)}"
        )
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    except ValueError:
        raise InvalidInput(field, "is not a point on the P-256 curve") from None
    return raw


def _auth(value: object) -> bytes:
    field = "subscription.keys.auth"
    raw = _decoded(value, field)
    if len(raw) != 16:
        raise InvalidInput(field, f"must decode to 16 bytes, not {len(raw)}")
    return raw


def _decoded(value: object, field: str) -> bytes:
    if not isinstance(value, str) or not value:
        raise InvalidInput(field, "required: base64url text")
    try:
        return b64decode(value)
    except ValueError:
        raise InvalidInput(field, "not base64url (A-Z a-z 0-9 - _, padding optional)") from None


def b64decode(text: str) -> bytes:
    """Base64url with or without padding (browsers send it without); ValueError otherwise."""
    if not _BASE64URL.fullmatch(text):
        raise ValueError("not base64url")
    stripped = text.rstrip("=")
    try:
        return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except binascii.Error as error:
        raise ValueError(str(error)) from None


def b64encode(data: bytes) -> str:
    """Unpadded base64url, as Web Push writes keys."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def encrypt(
    plaintext: bytes,
    *,
    p256dh: bytes,
    auth: bytes,
    salt: bytes | None = None,
    sender: ec.EllipticCurvePrivateKey | None = None,
) -> bytes:
    """`plaintext` encrypted for one subscription (RFC 8291, `aes128gcm`, one record).

    A new ECDH key pair and salt are made for every message unless given (only RFC 8291's
    worked example gives them, to check the result byte for byte).
    """
    key = sender if sender is not None else ec.generate_private_key(ec.SECP256R1())
    body: bytes = http_ece.encrypt(
        plaintext,
        salt=salt if salt is not None else os.urandom(16),
        private_key=key,  # its public key becomes the header's key id, as RFC 8291 wants
        dh=p256dh,
        auth_secret=auth,
        version="aes128gcm",
        rs=RECORD_SIZE,
    )
    return body


def load_vapid_key(text: str) -> ec.EllipticCurvePrivateKey:
    """A VAPID private key from base64url of its raw 32 bytes, or from a PEM (PKCS#8 or SEC1).

    The error never quotes the key.
    """
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(text.encode(), password=None)
        else:
            raw = b64decode(text)
            if len(raw) != 32:
                raise ValueError
            key = ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError(
            "the VAPID private key is not a P-256 private key "
            "(base64url of the raw 32 bytes, or a PEM): make one with `tocsin keys vapid`"
        )
    return key


def application_server_key(key: ec.EllipticCurvePrivateKey) -> str:
    """The public key browsers subscribe with (`applicationServerKey`): base64url of the
    uncompressed point, as VAPID's `k` also carries it."""
    point = key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return b64encode(point)


def new_vapid_keys() -> tuple[str, str]:
    """A fresh VAPID key pair: (the private key for TOCSIN_VAPID_PRIVATE_KEY, the public
    application server key), both base64url."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_numbers().private_value.to_bytes(32, "big")
    return b64encode(private), application_server_key(key)


class WebPushSettings(CoreSettings):
    """The `webpush` channel's (RFC 8030 / 8291 / 8292; docs/channels.md#web-push)."""

    vapid_private_key: SecretStr | None = Field(
        default=None,
        description="The VAPID private key (P-256): base64url of the raw 32 bytes, or a PEM. "
        "Make a pair with `tocsin keys vapid`. Enables `webpush` with TOCSIN_VAPID_SUBJECT.",
    )
    vapid_private_key_file: ReadableFile = Field(
        default=None,
        description="A file holding the VAPID private key (either form), instead of "
        "TOCSIN_VAPID_PRIVATE_KEY.",
    )
    vapid_subject: str | None = Field(
        default=None,
        description="Who push services contact about this server's pushes: a `mailto:` or "
        "`https:` URL (the VAPID JWT's `sub`).",
    )
    webpush_timeout_seconds: float = Field(
        default=10.0, gt=0, description="The longest one push service request may take."
    )
    webpush_ca_file: CaFile = Field(
        default=None,
        description="CA bundle (PEM) to trust for push services as well as the system's "
        "(subscriptions name many push services): for one of your own with a private CA.",
    )

    @field_validator("vapid_subject")
    @classmethod
    def _vapid_subject_is_a_contact(cls, value: str | None) -> str | None:
        # RFC 8292 section 2.1: the push service may contact the sender at this address.
        if value is not None and not value.startswith(("mailto:", "https://")):
            raise ValueError("must be a mailto: or https: URL (mailto:ops@example.com)")
        return value


def build(
    settings: WebPushSettings, clock: Clock, links: ActionLinks | None = None
) -> WebPushSender | None:
    """The sender, or None when no VAPID key is set; a key without a subject (or two keys)
    is a mistake and raises ValueError naming the settings. With `links`, each push offers
    its ring's Done and Snooze."""
    if settings.vapid_private_key is not None and settings.vapid_private_key_file is not None:
        raise ValueError("set TOCSIN_VAPID_PRIVATE_KEY or TOCSIN_VAPID_PRIVATE_KEY_FILE, not both")
    if settings.vapid_private_key is not None:
        text = settings.vapid_private_key.get_secret_value()
    elif settings.vapid_private_key_file is not None:
        text = settings.vapid_private_key_file.read_text()
    else:
        return None
    if not settings.vapid_subject:
        raise ValueError(
            "TOCSIN_VAPID_SUBJECT is required with a VAPID key: a mailto: or https: URL "
            "at which push services can reach this server's operator"
        )
    return WebPushSender(
        key=load_vapid_key(text),
        subject=settings.vapid_subject,
        clock=clock,
        timeout=settings.webpush_timeout_seconds,
        max_connections=settings.delivery_concurrency,
        allow_private=settings.allow_private_urls,
        tls=trusting(settings.webpush_ca_file, also_the_systems=True),
        links=links,
    )


class WebPushSender(DestinationSender):
    """Posts encrypted pushes over one pool of keep-alive connections (aiohttp, as the
    webhook channel: a handful of push services take every message, so connections to each
    are reused), with a VAPID JWT per push service origin, signed once and reused for hours.
    """

    def __init__(
        self,
        *,
        key: ec.EllipticCurvePrivateKey,
        subject: str,
        clock: Clock,
        timeout: float,
        max_connections: int,
        allow_private: bool = False,
        tls: ssl.SSLContext | None = None,
        links: ActionLinks | None = None,
    ) -> None:
        self._key = key
        self._links = links
        self._public_key = application_server_key(key)
        self._subject = subject
        self._clock = clock
        self._timeout = timeout
        self._max_connections = max_connections
        self._allow_private = allow_private  # endpoints are held to the outbound URL policy
        self._tls = tls  # None: the system's CAs
        self._jwts: dict[str, tuple[int, str]] = {}  # origin -> (exp, Authorization value)
        self._session: aiohttp.ClientSession | None = None  # made in the event loop

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            resolver = GuardedResolver(allow_private=self._allow_private)
            self._session = http_session(self._max_connections, resolver=resolver, tls=self._tls)
        return self._session

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        seconds = min(time_limit, self._timeout)
        if seconds <= 0:  # aiohttp would read a total of 0 as "no time limit at all"
            return DeliveryResult.retry("no time left before the deadline")
        endpoint = destination.address["endpoint"]
        refused = refused_url(endpoint, allow_private=self._allow_private, what="push endpoint")
        if refused is not None:
            return DeliveryResult.failed(refused)
        now = self._clock.now()
        try:
            body = encrypt(
                _payload(firing, self._links),
                p256dh=b64decode(destination.address["p256dh"]),
                auth=b64decode(destination.address["auth"]),
            )
            origin = audience(endpoint)
        except (KeyError, ValueError, http_ece.ECEException):
            return DeliveryResult.failed("the stored subscription cannot be used (bad keys)")
        headers = {
            "authorization": self._authorization(origin, now),
            "content-encoding": "aes128gcm",
            "content-type": "application/octet-stream",
            "ttl": str(max(0, int((firing.deadline - now).total_seconds()))),
            "urgency": "high",
            "topic": topic(firing.reminder_id),
        }
        limit = aiohttp.ClientTimeout(total=seconds)
        try:
            async with self._client().post(
                endpoint, data=body, headers=headers, timeout=limit, allow_redirects=False
            ) as response:
                answer = await response.content.read(MAX_ERROR_BODY)
                return classify(response.status, response.headers, answer)
        except TimeoutError:
            return DeliveryResult.retry("timeout")
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError):
            return DeliveryResult.failed("bad push endpoint URL")
        except aiohttp.ClientConnectorCertificateError as error:
            return DeliveryResult.retry(
                f"{outside_text(error)} (for a private CA set TOCSIN_WEBPUSH_CA_FILE)"
            )
        except aiohttp.ClientError as error:
            policy = refused_by_policy(error)
            if policy is not None:
                return DeliveryResult.failed(outside_text(policy))
            return DeliveryResult.retry(
                f"connection error: {type(error).__name__}: {outside_text(error)}"
            )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _authorization(self, origin: str, now: datetime) -> str:
        """`vapid t=<JWT>, k=<public key>` for `origin` (RFC 8292 section 3), from the cache
        while its token has more than JWT_RENEW_SECONDS left: an ES256 signature costs ~60 µs,
        and one token serves every message to that push service for hours."""
        stamp = int(now.timestamp())
        cached = self._jwts.get(origin)
        if cached is not None and cached[0] - JWT_RENEW_SECONDS > stamp:
            return cached[1]
        exp = stamp + JWT_LIFETIME_SECONDS
        token = sign_jwt({"aud": origin, "exp": exp, "sub": self._subject}, self._key)
        value = f"vapid t={token}, k={self._public_key}"
        if len(self._jwts) >= MAX_CACHED_ORIGINS:
            self._jwts.pop(next(iter(self._jwts)))  # the oldest: push services are few
        self._jwts[origin] = (exp, value)
        return value


def classify(status: int, headers: Mapping[str, str], answer: bytes) -> DeliveryResult:
    """A push service's answer (RFC 8030 section 5 and the services' documented errors)."""
    if 200 <= status < 300:  # 201 Created (RFC 8030); some services answer 200 or 202
        location = headers.get("location")
        return DeliveryResult.sent(outside_text(location, MAX_ID) if location else None)
    error = f"HTTP {status}: {outside_text(answer)}".rstrip(": ")
    if status in (404, 410):
        return DeliveryResult.destination_gone(f"{error} (the subscription expired or was removed)")
    if status in (408, 429) or status >= 500:
        return DeliveryResult.retry(error, parse_retry_after(headers.get("retry-after")))
    if status == 413:
        return DeliveryResult.failed(f"{error} (payload too large)")
    if status in (401, 403):
        return DeliveryResult.failed(
            f"{error} (VAPID refused: the subscription was made with another "
            "application server key, or TOCSIN_VAPID_SUBJECT is not accepted)"
        )
    return DeliveryResult.failed(error)


def topic(reminder_id: str) -> str:
    """The `Topic` of a reminder's pushes: a push service keeps only the newest undelivered
    message of a topic, so a device that was offline gets one ring of a reminder, not a pile.
    A hash rather than the id itself, because the push service reads it in clear."""
    digest = hashlib.sha256(reminder_id.encode()).digest()
    return b64encode(digest)[:TOPIC_LENGTH]


def audience(endpoint: str) -> str:
    """The VAPID JWT's `aud`: the endpoint's origin (scheme, host, port unless the default)."""
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    port = "" if parts.port in (None, default) else f":{parts.port}"
    return f"{parts.scheme}://{host}{port}"


def _payload(firing: Firing, links: ActionLinks | None = None) -> bytes:
    """The JSON the page's service worker reads (`src/tocsin/web/worker.js`), its text
    shortened to fit one record; with `links`, the actions it offers, each with the URL its
    click posts to."""
    text = firing.text
    fields: dict[str, Any] = {
        "id": firing.id,
        "reminder_id": firing.reminder_id,
        "due": firing.due_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if links is not None:
        fields["actions"] = links.of(firing).offered()
    while True:
        payload = orjson.dumps({**fields, "text": text})
        excess = len(payload) - MAX_PLAINTEXT
        if excess <= 0:
            return payload
        # A character takes at least one byte: cutting `excess` + 3 (the ellipsis) always
        # shrinks enough, usually more.
        text = text[: max(0, len(text) - excess - 3)] + "…"
