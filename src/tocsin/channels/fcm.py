"""The `fcm` channel: notifications to Android (and iOS, web) apps through Firebase Cloud
Messaging's HTTP v1 API, authorised by a Google service account.

The service account's key signs an RS256 JWT that its `token_uri` trades for an OAuth2 access
token (the JWT-bearer grant); the token is kept until five minutes before it expires, and
fetched again at once when FCM answers 401. Every message carries the firing's deadline:
FCM would otherwise keep an undelivered message for four weeks.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import Field

from tocsin.actions import ActionLinks, RingLinks
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.channels.push import (
    CATEGORY,
    alert_title,
    contact_strings,
    deadline_epoch,
    json_object,
    seconds_left,
    utc_text,
)
from tocsin.channels.sessions import http_session, trusting
from tocsin.channels.webhook import parse_retry_after
from tocsin.clock import Clock
from tocsin.domain import Channel, Firing
from tocsin.errors import InvalidInput
from tocsin.outside import MAX_ID, outside_text
from tocsin.settings_core import CaFile, CoreSettings, ReadableFile

KIND = Channel.FCM
ENABLED_BY = "TOCSIN_FCM_SERVICE_ACCOUNT_FILE"

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_LIFETIME = timedelta(hours=1)  # Google's longest
TOKEN_MARGIN = timedelta(minutes=5)  # an access token is renewed this long before it expires
# A registration token is opaque: today ~160 characters of [A-Za-z0-9_:-]. What FCM promises
# is only a string; this takes any printable ASCII without spaces, within sane lengths.
REGISTRATION_TOKEN = re.compile(r"[\x21-\x7e]{20,4096}")
CONTACT_FIELDS = frozenset({"token"})
SERVICE_ACCOUNT_FIELDS = ("client_email", "private_key", "token_uri")

FCM_ERROR = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
RETRY_CODES = frozenset({"QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL"})


def validate_contact(fields: Mapping[str, Any]) -> dict[str, str]:
    """`token`: the app's FCM registration token, exactly as the Firebase SDK gave it."""
    token = contact_strings(fields, kind="fcm", allowed=CONTACT_FIELDS).get("token")
    if not token:
        raise InvalidInput("token", "required: the registration token the app got from FCM")
    if not REGISTRATION_TOKEN.fullmatch(token):
        raise InvalidInput("token", "must be 20 to 4096 printable ASCII characters, without spaces")
    return {"token": token}


class FcmSettings(CoreSettings):
    """The `fcm` channel's (Firebase Cloud Messaging, HTTP v1; docs/channels.md#fcm)."""

    fcm_service_account_file: ReadableFile = Field(
        default=None,
        description="Path to the Firebase project's service account key (JSON).",
    )
    fcm_project_id: str | None = Field(
        default=None, description="The Firebase project id; default: the key file's."
    )
    fcm_base_url: str = Field(
        default="https://fcm.googleapis.com", description="FCM's HTTP v1 host."
    )
    fcm_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Longest one FCM send may take (with its token)."
    )
    fcm_ca_file: CaFile = Field(
        default=None,
        description="CA bundle (PEM) to verify the FCM host and the service account's "
        "`token_uri` with instead of the system's: for a local FCM-compatible peer.",
    )


def build(
    settings: FcmSettings, clock: Clock, links: ActionLinks | None = None
) -> FcmSender | None:
    """The FCM sender, or None unless a service account file is set. With `links`, each
    message carries its ring's Done and Snooze URLs (`message`)."""
    if settings.fcm_service_account_file is None:
        return None
    account = load_service_account(settings.fcm_service_account_file)
    project = settings.fcm_project_id or account.project_id
    if not project:
        raise ValueError(
            "TOCSIN_FCM_PROJECT_ID: the service account file names no project_id; set it"
        )
    return FcmSender(
        AccessToken(account, clock),
        send_url=f"{settings.fcm_base_url.rstrip('/')}/v1/projects/{project}/messages:send",
        clock=clock,
        timeout=settings.fcm_timeout_seconds,
        max_connections=settings.delivery_concurrency,
        tls=trusting(settings.fcm_ca_file),
        links=links,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class ServiceAccount:
    """The parts of a Google service account key file that FCM's auth needs."""

    client_email: str
    private_key: rsa.RSAPrivateKey
    private_key_id: str | None
    token_uri: str
    project_id: str | None


def load_service_account(path: Path) -> ServiceAccount:
    """Reads a service account key file (the JSON the Firebase console downloads). Raises
    ValueError naming the setting and what is wrong, never quoting the key."""
    where = f"TOCSIN_FCM_SERVICE_ACCOUNT_FILE ({path})"
    try:
        document = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise ValueError(f"{where}: cannot read it as JSON ({type(error).__name__})") from None
    if not isinstance(document, dict):
        raise ValueError(f"{where}: not a service account key file")
    missing = [name for name in SERVICE_ACCOUNT_FIELDS if not isinstance(document.get(name), str)]
    if missing:
        raise ValueError(f"{where}: has no {', '.join(missing)}")
    try:
        key = load_pem_private_key(document["private_key"].encode(), password=None)
    except (ValueError, TypeError):
        raise ValueError(f"{where}: its private_key is not a PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError(f"{where}: its private_key is not an RSA key")
    return ServiceAccount(
        client_email=document["client_email"],
        private_key=key,
        private_key_id=document.get("private_key_id"),
        token_uri=document["token_uri"],
        project_id=document.get("project_id"),
    )


class TokenError(Exception):
    """The token endpoint gave no access token; `retry` says whether to try again later."""

    def __init__(self, message: str, *, retry: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.retry_after = retry_after


class AccessToken:
    """The OAuth2 access token every send uses: fetched by one send while the others wait,
    kept until `TOKEN_MARGIN` before it expires, dropped when FCM refuses it."""

    def __init__(self, account: ServiceAccount, clock: Clock) -> None:
        self._account = account
        self._clock = clock
        self._token: str | None = None
        self._expires_at: datetime | None = None
        self._fetching = asyncio.Lock()

    async def current(self, session: aiohttp.ClientSession) -> str:
        token = self._fresh()
        if token is not None:
            return token
        async with self._fetching:
            token = self._fresh()  # fetched by another send while this one waited
            if token is None:
                token = await self._fetch(session)
            return token

    def refused(self, token: str) -> None:
        """FCM answered 401 to `token`: the next send fetches another (once, however many
        sends were refused at the same time)."""
        if token == self._token:
            self._token = None

    def _fresh(self) -> str | None:
        if self._token is None or self._expires_at is None:
            return None
        return self._token if self._clock.now() < self._expires_at - TOKEN_MARGIN else None

    async def _fetch(self, session: aiohttp.ClientSession) -> str:
        now = self._clock.now()
        form = {"grant_type": GRANT_TYPE, "assertion": self._assertion(now)}
        async with session.post(self._account.token_uri, data=form) as response:
            answer = await response.read()
            if response.status != 200:
                raise _token_error(response.status, answer, response.headers)
        document = json_object(answer)
        token, lifetime = document.get("access_token"), document.get("expires_in")
        if not isinstance(token, str) or not isinstance(lifetime, int | float):
            raise TokenError("OAuth2 token endpoint: no access_token in its answer", retry=True)
        self._token, self._expires_at = token, now + timedelta(seconds=lifetime)
        return token

    def _assertion(self, now: datetime) -> str:
        issued = int(now.timestamp())
        account = self._account
        return jwt.encode(
            {
                "iss": account.client_email,
                "scope": SCOPE,
                "aud": account.token_uri,
                "iat": issued,
                "exp": issued + int(ASSERTION_LIFETIME.total_seconds()),
            },
            account.private_key,
            algorithm="RS256",
            headers={"kid": account.private_key_id} if account.private_key_id else None,
        )


def _token_error(status: int, answer: bytes, headers: Mapping[str, str]) -> TokenError:
    document = json_object(answer)
    what = document.get("error_description") or document.get("error") or answer
    message = f"OAuth2 token endpoint: HTTP {status}: {outside_text(what)}"
    retry_after = parse_retry_after(headers.get("retry-after"))
    return TokenError(message, retry=status == 429 or status >= 500, retry_after=retry_after)


@dataclass(frozen=True, kw_only=True, slots=True)
class Answer:
    """What FCM said to one send."""

    status: int
    body: dict[str, Any]
    retry_after: float | None


class FcmSender(DestinationSender):
    """Posts messages over a pool of kept HTTP/1.1 connections (aiohttp, as the webhook
    channel, for the same reason: its pool stays cheap with hundreds of sends in flight)."""

    def __init__(
        self,
        token: AccessToken,
        *,
        send_url: str,
        clock: Clock,
        timeout: float,
        max_connections: int,
        tls: ssl.SSLContext | None = None,
        links: ActionLinks | None = None,
    ) -> None:
        self._token = token
        self._links = links
        self._send_url = send_url
        self._clock = clock
        self._timeout = timeout
        self._max_connections = max_connections
        self._tls = tls  # None: the system's CAs
        self._session: aiohttp.ClientSession | None = None  # made in the event loop

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = http_session(self._max_connections, tls=self._tls)
        return self._session

    async def send(
        self, firing: Firing, destination: Destination, *, time_limit: float
    ) -> DeliveryResult:
        links = self._links.of(firing) if self._links is not None else None
        body = orjson.dumps({"message": message(firing, destination, self._clock.now(), links)})
        try:
            async with asyncio.timeout(min(time_limit, self._timeout)):
                answer = await self._post(body)
                if _access_token_refused(answer):
                    answer = await self._post(body)  # with a token fetched anew
        except TimeoutError:
            return DeliveryResult.retry("timeout")
        except TokenError as error:
            if error.retry:
                return DeliveryResult.retry(str(error), error.retry_after)
            return DeliveryResult.failed(str(error))
        except aiohttp.ClientConnectorCertificateError as error:
            return DeliveryResult.retry(
                f"{outside_text(error)} (for a private CA set TOCSIN_FCM_CA_FILE)"
            )
        except aiohttp.ClientError as error:
            return DeliveryResult.retry(
                f"connection error: {type(error).__name__}: {outside_text(error)}"
            )
        return classify(answer)

    async def _post(self, body: bytes) -> Answer:
        session = self._client()
        token = await self._token.current(session)
        headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        async with session.post(self._send_url, data=body, headers=headers) as response:
            answer = Answer(
                status=response.status,
                body=json_object(await response.read()),
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if _access_token_refused(answer):
            self._token.refused(token)
        return answer

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def message(
    firing: Firing, destination: Destination, now: datetime, links: RingLinks | None = None
) -> dict[str, Any]:
    """The v1 `message`: the notification, Tocsin's ids as data (strings only, as FCM
    requires), and on each platform the deadline and the reminder as the collapse key. With
    `links`: the Done and Snooze URLs as data too (`done_url`, `snooze_url`), the click
    action an Android app's activity filters for and the category an iOS app registered
    (both `CATEGORY`)."""
    data = {
        "tocsin_id": firing.id,
        "reminder_id": firing.reminder_id,
        "due": utc_text(firing.due_at),
    }
    android: dict[str, Any] = {
        "ttl": f"{seconds_left(firing, now)}s",  # FCM's default would be four weeks
        "collapse_key": firing.reminder_id,
        "priority": "high",  # wakes the device: a reminder is due now
    }
    apns: dict[str, Any] = {
        "headers": {
            "apns-expiration": str(deadline_epoch(firing)),
            "apns-collapse-id": firing.reminder_id,
            "apns-priority": "10",
        }
    }
    if links is not None:
        data |= {"done_url": links.done, "snooze_url": links.snooze}
        android["notification"] = {"click_action": CATEGORY}
        apns["payload"] = {"aps": {"category": CATEGORY}}
    return {
        "token": destination.address["token"],
        "notification": {"title": alert_title(firing), "body": firing.text},
        "data": data,
        "android": android,
        "apns": apns,
    }


def _access_token_refused(answer: Answer) -> bool:
    """401 for Tocsin's own access token (not THIRD_PARTY_AUTH_ERROR, which is about the APNs
    or Web Push credentials kept in the Firebase project: a new token would not help)."""
    return answer.status == 401 and "THIRD_PARTY_AUTH_ERROR" not in _error_codes(answer.body)


def classify(answer: Answer) -> DeliveryResult:
    """FCM's answer, by its v1 error JSON: `error.status` and `details[].errorCode`."""
    if answer.status == 200:
        name = answer.body.get("name")
        return DeliveryResult.sent(outside_text(name, MAX_ID) if isinstance(name, str) else None)
    error = answer.body.get("error")
    error = error if isinstance(error, dict) else {}
    codes = _error_codes(answer.body)
    code = outside_text(next(iter(codes), None) or error.get("status") or "")
    text = f"FCM {answer.status} {code}: {outside_text(error.get('message') or '')}".rstrip(": ")
    if "UNREGISTERED" in codes or (code == "INVALID_ARGUMENT" and _token_invalid(error)):
        return DeliveryResult.destination_gone(text)
    if code in RETRY_CODES or answer.status == 429 or answer.status >= 500:
        return DeliveryResult.retry(text, answer.retry_after)
    return DeliveryResult.failed(text)


def _details(body: dict[str, Any]) -> list[dict[str, Any]]:
    error = body.get("error")
    details = error.get("details") if isinstance(error, dict) else None
    return [item for item in details or () if isinstance(item, dict)]


def _error_codes(body: dict[str, Any]) -> list[str]:
    return [
        str(item.get("errorCode"))
        for item in _details(body)
        if item.get("@type") == FCM_ERROR and item.get("errorCode")
    ]


def _token_invalid(error: dict[str, Any]) -> bool:
    """INVALID_ARGUMENT is about the registration token only when FCM's BadRequest detail
    names `message.token`; otherwise something else in the message was wrong (a bug, not a
    dead device), and the contact stays."""
    for item in _details({"error": error}):
        if item.get("@type") == BAD_REQUEST:
            violations = item.get("fieldViolations") or ()
            if any(isinstance(v, dict) and v.get("field") == "message.token" for v in violations):
                return True
    return False
