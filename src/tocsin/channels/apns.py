"""The `apns` channel: alerts to Apple devices through APNs' HTTP/2 provider API, token auth.

One HTTP/2 connection per APNs host (production, sandbox) carries every send as its own
stream. The provider token (an ES256 JWT from the team's .p8 key) is made once and reused
until it is 40 minutes old: Apple refuses one older than an hour and one renewed more often
than every 20 minutes.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import Field

from tocsin import __version__
from tocsin.actions import ActionLinks, RingLinks
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.channels.http2 import Header, HTTP2Error, Origin, Unique
from tocsin.channels.push import (
    CATEGORY,
    alert_title,
    contact_strings,
    deadline_epoch,
    json_object,
    utc_text,
)
from tocsin.channels.webhook import parse_retry_after
from tocsin.clock import Clock
from tocsin.domain import Channel, Firing
from tocsin.errors import InvalidInput
from tocsin.outside import MAX_ID, outside_text
from tocsin.settings_core import CaFile, CoreSettings, ReadableFile

KIND = Channel.APNS
ENABLED_BY = "TOCSIN_APNS_KEY_FILE, TOCSIN_APNS_KEY_ID and TOCSIN_APNS_TEAM_ID"

PRODUCTION = "production"
SANDBOX = "sandbox"
# Xcode's entitlement calls the sandbox `development`; an app may well send that word.
ENVIRONMENTS = {PRODUCTION: PRODUCTION, SANDBOX: SANDBOX, "development": SANDBOX}
TOKEN = re.compile(r"(?:[0-9a-f]{2}){32,100}")  # 64 hex digits today; Apple may lengthen it
BUNDLE_ID = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
MAX_BUNDLE_ID = 155
CONTACT_FIELDS = frozenset({"token", "environment", "bundle_id"})

# Apple: a provider token older than an hour is refused (ExpiredProviderToken), and one
# renewed more often than every 20 minutes is too (TooManyProviderTokenUpdates).
TOKEN_REFRESH_AFTER = timedelta(minutes=40)
MAX_PAYLOAD = 4096  # bytes, Apple's limit for an alert
APNS_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://tocsin.dev/firing")

# Apple's reasons that say the device token is no good for this app, ever.
GONE_REASONS = frozenset({"Unregistered", "BadDeviceToken", "DeviceTokenNotForTopic"})
RETRY_STATUSES = frozenset({429, 500, 503})
USER_AGENT = f"tocsin/{__version__}"


def validate_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """`token` (hex, any case, stored lower case), `environment` (`production` by default,
    `sandbox`, or Xcode's `development` stored as `sandbox`), and an optional `bundle_id`
    (the app's, sent as `apns-topic` instead of TOCSIN_APNS_TOPIC)."""
    values = contact_strings(fields, kind="apns", allowed=CONTACT_FIELDS)
    token = values.get("token", "").strip().lower()
    if not token:
        raise InvalidInput("token", "required: the device token the app got from APNs")
    if not TOKEN.fullmatch(token):
        raise InvalidInput("token", "must be an even number of hex digits, 64 to 200 of them")
    contact = {"token": token}
    environment = values.get("environment", PRODUCTION).strip().lower()
    if environment not in ENVIRONMENTS:
        raise InvalidInput("environment", "must be `production` or `sandbox`")
    contact["environment"] = ENVIRONMENTS[environment]
    bundle_id = values.get("bundle_id", "").strip()
    if bundle_id:
        if len(bundle_id) > MAX_BUNDLE_ID or not BUNDLE_ID.fullmatch(bundle_id):
            raise InvalidInput("bundle_id", "must be an app's bundle id, like com.example.app")
        contact["bundle_id"] = bundle_id
    return contact


class ApnsSettings(CoreSettings):
    """The `apns` channel's (Apple Push Notification service, docs/channels.md#apns)."""

    apns_key_file: ReadableFile = Field(
        default=None,
        description="Path to the .p8 token-signing key (PEM) from the Apple developer account.",
    )
    apns_key_id: str | None = Field(
        default=None, description="The 10-character id of that key (the JWT's `kid`)."
    )
    apns_team_id: str | None = Field(
        default=None, description="The Apple developer team id (the JWT's `iss`)."
    )
    apns_topic: str | None = Field(
        default=None,
        description="The app's bundle id, sent as `apns-topic` for contacts without their own.",
    )
    apns_base_url: str = Field(
        default="https://api.push.apple.com", description="APNs production host."
    )
    apns_sandbox_base_url: str = Field(
        default="https://api.sandbox.push.apple.com",
        description="APNs sandbox host, for contacts whose `environment` is `sandbox`.",
    )
    apns_ca_file: CaFile = Field(
        default=None,
        description="CA bundle (PEM) to verify the APNs host with instead of the system's.",
    )
    apns_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Longest one APNs send may take."
    )


def build(
    settings: ApnsSettings, clock: Clock, links: ActionLinks | None = None
) -> ApnsSender | None:
    """The APNs sender, or None unless the key file, key id and team id are all set. With
    `links`, each alert offers its ring's Done and Snooze (`CATEGORY`)."""
    if not (settings.apns_key_file and settings.apns_key_id and settings.apns_team_id):
        return None
    token = ProviderToken(
        key=load_key(settings.apns_key_file),
        key_id=settings.apns_key_id,
        team_id=settings.apns_team_id,
        clock=clock,
    )
    return ApnsSender(
        token,
        base_urls={PRODUCTION: settings.apns_base_url, SANDBOX: settings.apns_sandbox_base_url},
        topic=settings.apns_topic,
        tls=tls_context(settings.apns_ca_file),
        timeout=settings.apns_timeout_seconds,
        links=links,
    )


def load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The .p8 signing key (a PEM PKCS#8 P-256 key). Raises ValueError naming the setting,
    never quoting the file."""
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise ValueError(
            f"TOCSIN_APNS_KEY_FILE: cannot read a PEM private key from {path} "
            f"({type(error).__name__})"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError(f"TOCSIN_APNS_KEY_FILE: {path} is not a P-256 (ES256) key")
    return key


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """Verifies APNs' certificate against the system's CAs, or only `ca_file` when set, and
    offers HTTP/2 (ALPN `h2`), the only protocol APNs speaks."""
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    context.set_alpn_protocols(["h2"])
    return context


def apns_id(firing: Firing) -> str:
    """The firing's delivery identity as a UUID: every repeat carries the same `apns-id`."""
    return str(uuid.uuid5(APNS_ID_NAMESPACE, firing.id))


class ProviderToken:
    """The provider token: one ES256 JWT shared by every send, renewed when 40 minutes old or
    when Apple calls it expired."""

    def __init__(
        self, *, key: ec.EllipticCurvePrivateKey, key_id: str, team_id: str, clock: Clock
    ) -> None:
        self._key = key
        self._key_id = key_id
        self._team_id = team_id
        self._clock = clock
        self._token: str | None = None
        self._issued_at: datetime | None = None

    def current(self) -> str:
        now = self._clock.now()
        if (
            self._token is None
            or self._issued_at is None
            or now - self._issued_at >= TOKEN_REFRESH_AFTER
        ):
            self._issued_at = now
            self._token = jwt.encode(
                {"iss": self._team_id, "iat": int(now.timestamp())},
                self._key,
                algorithm="ES256",
                headers={"kid": self._key_id},
            )
        return self._token

    def expired(self, token: str) -> None:
        """Apple called `token` expired: the next send makes a new one. (Only when `token` is
        still the current one, so that many sends refused at once renew it once.)"""
        if token == self._token:
            self._token = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """What APNs said to one request."""

    status: int
    reason: str
    apns_id: str | None
    retry_after: float | None


class ApnsSender(DestinationSender):
    """Sends alerts over one kept HTTP/2 connection per APNs host (`tocsin.channels.http2`,
    on h2: see docs/channels.md for why, and the throughput measured)."""

    def __init__(
        self,
        token: ProviderToken,
        *,
        base_urls: Mapping[str, str],
        topic: str | None,
        tls: ssl.SSLContext,
        timeout: float,
        links: ActionLinks | None = None,
    ) -> None:
        self._token = token
        self._links = links
        self._origins = {name: Origin(url, tls) for name, url in base_urls.items()}
        self._topic = topic
        self._timeout = timeout

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        address = destination.address
        topic = address.get("bundle_id") or self._topic
        if not topic:
            return DeliveryResult.failed(
                "no apns-topic: set TOCSIN_APNS_TOPIC or the contact's bundle_id"
            )
        origin = self._origins[address.get("environment", PRODUCTION)]
        path = f"/3/device/{address['token']}"
        headers = _headers(firing, topic)
        body = payload(firing, self._links.of(firing) if self._links is not None else None)
        try:
            async with asyncio.timeout(min(time_limit, self._timeout)):
                answer = await self._post(origin, path, headers, body)
                if answer.reason == "ExpiredProviderToken":
                    answer = await self._post(origin, path, headers, body)  # with a new one
        except TimeoutError:
            return DeliveryResult.retry("timeout")
        except (HTTP2Error, OSError) as error:
            return DeliveryResult.retry(
                f"connection error: {type(error).__name__}: {outside_text(error)}"
            )
        return classify(answer)

    async def _post(self, origin: Origin, path: str, headers: list[Header], body: bytes) -> Answer:
        token = self._token.current()
        response = await origin.request(
            "POST", path, [*headers, ("authorization", f"bearer {token}")], body
        )
        reason = json_object(response.body).get("reason") or response.body
        apns_id = response.headers.get("apns-id")  # read as latin-1: any byte, NUL included
        answer = Answer(
            status=response.status,
            reason=outside_text(reason),
            apns_id=outside_text(apns_id, MAX_ID) if apns_id else None,
            retry_after=parse_retry_after(response.headers.get("retry-after")),
        )
        if answer.reason == "ExpiredProviderToken":
            self._token.expired(token)
        return answer

    def connections_opened(self) -> int:
        """How many connections were opened to APNs (for the tests of connection reuse)."""
        return sum(origin.connections_opened for origin in self._origins.values())

    async def close(self) -> None:
        for origin in self._origins.values():
            await origin.close()


def _headers(firing: Firing, topic: str) -> list[Header]:
    return [
        ("apns-push-type", "alert"),
        ("apns-priority", "10"),  # deliver now: a reminder is due
        ("apns-expiration", str(deadline_epoch(firing))),  # Apple drops it after the deadline
        # A later ring replaces an earlier one still unseen on the lock screen.
        Unique("apns-collapse-id", firing.reminder_id),
        Unique("apns-id", apns_id(firing)),
        ("apns-topic", topic),
        ("content-type", "application/json"),
        ("user-agent", USER_AGENT),
    ]


def payload(firing: Firing, links: RingLinks | None = None) -> bytes:
    """The alert: the title, the reminder's text as the body (cut to keep the payload within
    Apple's 4 KiB), the default sound, and Tocsin's ids for the app; with `links`, the
    category whose Done and Snooze the app registered (`CATEGORY`) and the URL each posts
    to."""
    text = firing.text
    aps: dict[str, Any] = {"sound": "default"}
    ours: dict[str, str] = {
        "id": firing.id,
        "reminder_id": firing.reminder_id,
        "due": utc_text(firing.due_at),
    }
    if links is not None:
        aps["category"] = CATEGORY
        ours |= {"done_url": links.done, "snooze_url": links.snooze}
    while True:
        alert = {"title": alert_title(firing), "body": text}
        body = orjson.dumps({"aps": {"alert": alert, **aps}, "tocsin": ours})
        excess = len(body) - MAX_PAYLOAD
        if excess <= 0 or not text:
            return body
        # Each character cut is at least one byte; three more make room for the "…".
        text = text[: max(0, len(text) - excess - 3)] + "…"


def classify(answer: Answer) -> DeliveryResult:
    """Apple's answer, by its table of status codes and reasons."""
    status, reason = answer.status, answer.reason
    if status == 200:
        return DeliveryResult.sent(answer.apns_id)
    error = f"APNs {status} {reason}".rstrip()
    if status == 410 or reason in GONE_REASONS:
        return DeliveryResult.destination_gone(error)
    if status in RETRY_STATUSES or status >= 500 or reason == "ExpiredProviderToken":
        return DeliveryResult.retry(error, answer.retry_after)
    return DeliveryResult.failed(error)
